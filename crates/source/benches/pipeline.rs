//! The wrapper pipeline over 100,000 endpoints: dedup (with validation), target-net filter and the
//! post-processor (min TTL, provider-property retention and sort), as one reconcile of a large cluster.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use extdns_endpoint::{Endpoint, ObjectKey, ProviderSpecific, RecordType, TargetNetFilter, Ttl};
use extdns_informer::ResourceKind;
use extdns_source::{Pipeline, PipelineConfig};

const N: usize = 100_000;

/// A realistic mix: mostly A records with one or two targets (some in an excluded network), CNAMEs to
/// load balancers, provider-specific properties for several providers, and 5% exact duplicates.
fn endpoints() -> Vec<(usize, Endpoint)> {
    let unique = N - N / 20;
    let mut out = Vec::with_capacity(N);
    for i in 0..unique {
        let name = format!("svc-{i}.ns-{}.example.com", i % 97);
        let r = ObjectKey::new(ResourceKind::Service, &format!("ns-{}", i % 97), &format!("svc-{i}"));
        let mut ps = ProviderSpecific::default();
        ps.set("webhook/zone", "z1");
        ps.set("aws/weight", "10");
        let e = if i % 4 == 0 {
            Endpoint::new(&name, RecordType::Cname, [format!("lb-{}.elb.example.net", i % 1000)])
        } else {
            let a = format!("34.{}.{}.{}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
            let b = format!("10.{}.{}.{}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
            Endpoint::new(&name, RecordType::A, [b, a])
        };
        let ttl = if i % 3 == 0 { Ttl(0) } else { Ttl(300) };
        let e = e.with_ttl(ttl).with_provider_specific(ps).with_ref_object(r);
        out.push((i % 2, e));
    }
    for i in 0..N - unique {
        let (src, mut dup) = out[i * 7].clone();
        dup.ref_objects.clear();
        out.push((src, dup));
    }
    out
}

fn bench(c: &mut Criterion) {
    let filter = TargetNetFilter::new(&[] as &[&str], &["10.0.0.0/8"]).unwrap_or_default();
    let pipeline = Pipeline::new(vec![], {
        let mut config = PipelineConfig::default();
        config.target_net_filter = filter;
        config.min_ttl = Ttl(60);
        config.provider = "aws".into();
        config
    });
    let input = endpoints();
    let names = ["service", "gateway-httproute"];
    let out = pipeline.process(input.clone(), &names);
    assert_eq!(
        out.endpoints.len(),
        N - N / 20,
        "duplicates removed, nothing else dropped"
    );
    assert!(
        out.endpoints
            .iter()
            .all(|e| e.targets.iter().all(|t| !t.starts_with("10.")))
    );

    let mut g = c.benchmark_group("source_pipeline");
    g.sample_size(20);
    g.bench_function("dedup_filter_postprocess_100k", |b| {
        b.iter_batched(
            || input.clone(),
            |eps| black_box(pipeline.process(eps, &names)),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
