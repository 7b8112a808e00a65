//! The data templates see for each object: the Go struct layout external-dns executes on (field names of
//! the typed Kubernetes object, with TypeMeta filled), and the unstructured JSON-key view for the retry.

use std::collections::BTreeMap;

use extdns_informer::StrMap;
use extdns_informer::view::{
    HttpProxy, Ingress, IstioGateway, Meta, MetaRef, Node, OpenShiftRoute, ParentReference, Pod, PodPhase, Route,
    RouteKind, Service, VirtualService,
};
use extdns_template::Value;

use super::{TemplateKind, TemplateObject, TemplateParts};

fn map_of(m: &StrMap) -> Value {
    Value::string_map(m.iter())
}

fn strs<S: AsRef<str>>(v: &[S]) -> Value {
    Value::list(v, |s| Value::str(s.as_ref()))
}

/// What every object's template data starts from, typed or unstructured: its kind, API version, metadata and
/// the annotations templates see; the kind's own `spec` and `status` go inside.
struct Envelope<'a> {
    kind: &'a str,
    api_version: &'a str,
    meta: MetaRef<'a>,
    annotations: &'a StrMap,
}

impl<'a> Envelope<'a> {
    fn new(kind: &'a str, api_version: &'a str, meta: impl Into<MetaRef<'a>>, annotations: &'a StrMap) -> Self {
        Envelope {
            kind,
            api_version,
            meta: meta.into(),
            annotations,
        }
    }

    /// The typed top level: TypeMeta and ObjectMeta are embedded, so their fields are promoted (`.Kind`,
    /// `.Name`) and also reachable by type name (`.ObjectMeta.Name`).
    fn typed(&self, type_name: &'static str, spec: Value, status: Value) -> Value {
        let object_meta = Value::Struct(
            "v1.ObjectMeta",
            vec![
                ("Name", Value::str(self.meta.name)),
                ("Namespace", Value::str(self.meta.namespace)),
                ("Labels", map_of(self.meta.labels)),
                ("Annotations", map_of(self.annotations)),
            ],
        );
        let type_meta = Value::Struct(
            "v1.TypeMeta",
            vec![
                ("Kind", Value::str(self.kind)),
                ("APIVersion", Value::str(self.api_version)),
            ],
        );
        Value::Struct(
            type_name,
            vec![
                ("Kind", Value::str(self.kind)),
                ("APIVersion", Value::str(self.api_version)),
                ("TypeMeta", type_meta),
                ("Name", Value::str(self.meta.name)),
                ("Namespace", Value::str(self.meta.namespace)),
                ("Labels", map_of(self.meta.labels)),
                ("Annotations", map_of(self.annotations)),
                ("ObjectMeta", object_meta),
                ("Spec", spec),
                ("Status", status),
            ],
        )
    }
}

/// A JSON object builder that leaves out empty fields, as `omitempty` does.
#[derive(Default)]
struct Obj(BTreeMap<String, Value>);

impl Obj {
    fn put(mut self, k: &str, v: Value) -> Self {
        self.0.insert(k.to_string(), v);
        self
    }
    fn opt(self, k: &str, v: Option<Value>) -> Self {
        match v {
            Some(v) => self.put(k, v),
            None => self,
        }
    }
    fn nonempty_str(self, k: &str, v: &str) -> Self {
        if v.is_empty() { self } else { self.put(k, Value::str(v)) }
    }
    fn nonempty_list(self, k: &str, v: Value) -> Self {
        match &v {
            Value::List(l) if l.is_empty() => self,
            Value::Map(m) if m.is_empty() => self,
            _ => self.put(k, v),
        }
    }
    fn done(self) -> Value {
        Value::Map(self.0)
    }
}

impl Envelope<'_> {
    /// The unstructured wrapper: a few promoted fields plus the raw JSON object.
    fn unstructured(&self, spec: Value, status: Value) -> Value {
        let metadata = Obj::default()
            .put("name", Value::str(self.meta.name))
            .nonempty_str("namespace", self.meta.namespace)
            .nonempty_list("labels", map_of(self.meta.labels))
            .nonempty_list("annotations", map_of(self.annotations))
            .done();
        let object = Obj::default()
            .put("apiVersion", Value::str(self.api_version))
            .put("kind", Value::str(self.kind))
            .put("metadata", metadata.clone())
            .put("spec", spec.clone())
            .put("status", status.clone())
            .done();
        Value::Struct(
            "unstructured",
            vec![
                ("Name", Value::str(self.meta.name)),
                ("Namespace", Value::str(self.meta.namespace)),
                ("Kind", Value::str(self.kind)),
                ("APIVersion", Value::str(self.api_version)),
                ("Labels", map_of(self.meta.labels)),
                ("Annotations", map_of(self.annotations)),
                ("Metadata", metadata),
                ("Spec", spec),
                ("Status", status),
                ("Object", object),
            ],
        )
    }
}

impl TemplateObject for Service {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(&self.meta, TemplateKind::Service, self.template_fields.as_deref())
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let ports = Value::list(&self.ports, |p| {
            Value::Struct(
                "v1.ServicePort",
                vec![
                    ("Name", Value::str(p.name.as_deref().unwrap_or_default())),
                    ("Protocol", Value::str(p.protocol.as_deref().unwrap_or("TCP"))),
                    ("Port", Value::Int(i64::from(p.port))),
                    ("NodePort", Value::Int(i64::from(p.node_port.unwrap_or(0)))),
                    // intstr.IntOrString prints as its int or string form.
                    ("TargetPort", Value::str(p.target_port.as_deref().unwrap_or("0"))),
                ],
            )
        });
        let spec = Value::Struct(
            "v1.ServiceSpec",
            vec![
                ("Type", Value::str(self.service_type.as_str())),
                ("ClusterIP", Value::str(self.cluster_ip.as_deref().unwrap_or_default())),
                ("ClusterIPs", strs(&self.cluster_ips)),
                ("ExternalIPs", strs(&self.external_ips)),
                (
                    "ExternalName",
                    Value::str(self.external_name.as_deref().unwrap_or_default()),
                ),
                (
                    "ExternalTrafficPolicy",
                    Value::str(self.external_traffic_policy.as_deref().unwrap_or_default()),
                ),
                (
                    "PublishNotReadyAddresses",
                    Value::Bool(self.publish_not_ready_addresses),
                ),
                ("Selector", map_of(&self.selector)),
                ("Ports", ports),
            ],
        );
        let ingress = Value::list(&self.load_balancer_ingress, |i| {
            Value::Struct(
                "v1.LoadBalancerIngress",
                vec![
                    ("IP", Value::str(i.ip.as_deref().unwrap_or_default())),
                    ("Hostname", Value::str(i.hostname.as_deref().unwrap_or_default())),
                ],
            )
        });
        let status = Value::Struct(
            "v1.ServiceStatus",
            vec![(
                "LoadBalancer",
                Value::Struct("v1.LoadBalancerStatus", vec![("Ingress", ingress)]),
            )],
        );
        Envelope::new("Service", "v1", &self.meta, annotations).typed("*v1.Service", spec, status)
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        let ports = Value::list(&self.ports, |p| {
            let target = p.target_port.as_deref().map(|t| match t.parse::<i64>() {
                Ok(n) => Value::Int(n),
                Err(_) => Value::str(t),
            });
            Obj::default()
                .opt("name", p.name.as_deref().filter(|n| !n.is_empty()).map(Value::str))
                .put("protocol", Value::str(p.protocol.as_deref().unwrap_or("TCP")))
                .put("port", Value::Int(i64::from(p.port)))
                .opt(
                    "nodePort",
                    p.node_port.filter(|n| *n != 0).map(|n| Value::Int(i64::from(n))),
                )
                .opt("targetPort", target)
                .done()
        });
        let spec = Obj::default()
            .nonempty_str("type", &self.service_type)
            .nonempty_str("clusterIP", self.cluster_ip.as_deref().unwrap_or_default())
            .nonempty_list("clusterIPs", strs(&self.cluster_ips))
            .nonempty_list("externalIPs", strs(&self.external_ips))
            .nonempty_str("externalName", self.external_name.as_deref().unwrap_or_default())
            .nonempty_str(
                "externalTrafficPolicy",
                self.external_traffic_policy.as_deref().unwrap_or_default(),
            )
            .opt(
                "publishNotReadyAddresses",
                self.publish_not_ready_addresses.then_some(Value::Bool(true)),
            )
            .nonempty_list("selector", map_of(&self.selector))
            .nonempty_list("ports", ports)
            .done();
        let ingress = Value::list(&self.load_balancer_ingress, |i| {
            Obj::default()
                .nonempty_str("ip", i.ip.as_deref().unwrap_or_default())
                .nonempty_str("hostname", i.hostname.as_deref().unwrap_or_default())
                .done()
        });
        let status = Obj::default()
            .put("loadBalancer", Obj::default().nonempty_list("ingress", ingress).done())
            .done();
        Envelope::new("Service", "v1", &self.meta, annotations).unstructured(spec, status)
    }
}

fn typed_parent_ref(p: &ParentReference) -> Value {
    Value::Struct(
        "v1.ParentReference",
        vec![
            ("Group", Value::opt_str(p.group.as_deref())),
            ("Kind", Value::opt_str(p.kind.as_deref())),
            ("Namespace", Value::opt_str(p.namespace.as_deref())),
            ("Name", Value::str(p.name.as_str())),
            ("SectionName", Value::opt_str(p.section_name.as_deref())),
            ("Port", p.port.map_or(Value::Nil, |n| Value::Int(i64::from(n)))),
        ],
    )
}

fn json_parent_ref(p: &ParentReference) -> Value {
    Obj::default()
        .opt("group", p.group.as_deref().map(Value::str))
        .opt("kind", p.kind.as_deref().map(Value::str))
        .opt("namespace", p.namespace.as_deref().map(Value::str))
        .put("name", Value::str(p.name.as_str()))
        .opt("sectionName", p.section_name.as_deref().map(Value::str))
        .opt("port", p.port.map(|n| Value::Int(i64::from(n))))
        .done()
}

fn route_type_names(kind: RouteKind) -> (&'static str, &'static str) {
    match kind {
        RouteKind::Http => ("*v1.HTTPRoute", "v1.HTTPRouteSpec"),
        RouteKind::Grpc => ("*v1.GRPCRoute", "v1.GRPCRouteSpec"),
        RouteKind::Tls => ("*v1.TLSRoute", "v1.TLSRouteSpec"),
        RouteKind::Tcp => ("*v1alpha2.TCPRoute", "v1alpha2.TCPRouteSpec"),
        RouteKind::Udp => ("*v1alpha2.UDPRoute", "v1alpha2.UDPRouteSpec"),
    }
}

/// TCP and UDP routes have no `hostnames` in their spec.
fn has_hostnames(kind: RouteKind) -> bool {
    !matches!(kind, RouteKind::Tcp | RouteKind::Udp)
}

impl TemplateObject for Route {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(
            &self.meta,
            TemplateKind::Route(self.kind),
            self.template_fields.as_deref(),
        )
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let (type_name, spec_name) = route_type_names(self.kind);
        let mut spec_fields = Vec::new();
        if has_hostnames(self.kind) {
            spec_fields.push(("Hostnames", strs(&self.hostnames)));
        }
        spec_fields.push(("ParentRefs", Value::list(&self.parent_refs, typed_parent_ref)));
        let parents = Value::list(&self.parents, |p| {
            Value::Struct(
                "v1.RouteParentStatus",
                vec![("ParentRef", typed_parent_ref(&p.parent_ref))],
            )
        });
        let status = Value::Struct(
            "v1.RouteStatus",
            vec![
                ("Parents", parents.clone()),
                (
                    "RouteStatus",
                    Value::Struct("v1.RouteStatus", vec![("Parents", parents)]),
                ),
            ],
        );
        Envelope::new(self.kind.kind(), &self.kind.api_version(), &self.meta, annotations).typed(
            type_name,
            Value::Struct(spec_name, spec_fields),
            status,
        )
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        let mut spec = Obj::default();
        if has_hostnames(self.kind) {
            spec = spec.nonempty_list("hostnames", strs(&self.hostnames));
        }
        let spec = spec
            .nonempty_list("parentRefs", Value::list(&self.parent_refs, json_parent_ref))
            .done();
        let parents = Value::list(&self.parents, |p| {
            Obj::default().put("parentRef", json_parent_ref(&p.parent_ref)).done()
        });
        let status = Obj::default().nonempty_list("parents", parents).done();
        Envelope::new(self.kind.kind(), &self.kind.api_version(), &self.meta, annotations).unstructured(spec, status)
    }
}

/// The Ingress view holds no more than its names, class and load balancer; every other field a template
/// reads comes from the kept fields, rendered by the schema.
impl TemplateObject for Ingress {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(&self.meta, TemplateKind::Ingress, self.template_fields.as_deref())
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let spec = Value::Struct(
            "v1.IngressSpec",
            vec![("IngressClassName", Value::opt_str(self.ingress_class_name.as_deref()))],
        );
        let status = Value::Struct("v1.IngressStatus", vec![]);
        Envelope::new("Ingress", "networking.k8s.io/v1", &self.meta, annotations).typed("*v1.Ingress", spec, status)
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        let spec = Obj::default()
            .opt("ingressClassName", self.ingress_class_name.as_deref().map(Value::str))
            .done();
        Envelope::new("Ingress", "networking.k8s.io/v1", &self.meta, annotations)
            .unstructured(spec, Obj::default().done())
    }
}

/// A Node's view holds its addresses and `unschedulable`; other fields come from the kept fields.
impl TemplateObject for Node {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::of(self.meta(), TemplateKind::Node, self.template_fields.as_deref())
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let spec = Value::Struct("v1.NodeSpec", vec![("Unschedulable", Value::Bool(self.unschedulable))]);
        let addresses = Value::list(&self.addresses, |a| {
            Value::Struct(
                "v1.NodeAddress",
                vec![
                    ("Type", Value::str(a.address_type.as_str())),
                    ("Address", Value::str(a.address.as_str())),
                ],
            )
        });
        let status = Value::Struct("v1.NodeStatus", vec![("Addresses", addresses)]);
        Envelope::new("Node", "v1", self.meta(), annotations).typed("*v1.Node", spec, status)
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        let spec = Obj::default()
            .opt("unschedulable", self.unschedulable.then_some(Value::Bool(true)))
            .done();
        let addresses = Value::list(&self.addresses, |a| {
            Obj::default()
                .put("type", Value::str(a.address_type.as_str()))
                .put("address", Value::str(a.address.as_str()))
                .done()
        });
        let status = Obj::default().nonempty_list("addresses", addresses).done();
        Envelope::new("Node", "v1", self.meta(), annotations).unstructured(spec, status)
    }
}

/// A Pod's view holds where it runs and its addresses; other fields come from the kept fields.
impl TemplateObject for Pod {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::of(self.meta(), TemplateKind::Pod, self.template_fields.as_deref())
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let spec = Value::Struct(
            "v1.PodSpec",
            vec![
                ("NodeName", Value::str(self.node_name.as_deref().unwrap_or_default())),
                ("HostNetwork", Value::Bool(self.host_network)),
                ("Hostname", Value::str(self.hostname.as_deref().unwrap_or_default())),
            ],
        );
        let pod_ips = Value::list(&self.pod_ips, |ip| {
            Value::Struct("v1.PodIP", vec![("IP", Value::str(&**ip))])
        });
        let status = Value::Struct(
            "v1.PodStatus",
            vec![
                ("Phase", Value::str(phase_text(self))),
                ("HostIP", Value::str(self.host_ip.as_deref().unwrap_or_default())),
                (
                    "PodIP",
                    Value::str(self.pod_ips.first().map(|ip| &**ip).unwrap_or_default()),
                ),
                ("PodIPs", pod_ips),
            ],
        );
        Envelope::new("Pod", "v1", self.meta(), annotations).typed("*v1.Pod", spec, status)
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        let spec = Obj::default()
            .nonempty_str("nodeName", self.node_name.as_deref().unwrap_or_default())
            .opt("hostNetwork", self.host_network.then_some(Value::Bool(true)))
            .nonempty_str("hostname", self.hostname.as_deref().unwrap_or_default())
            .done();
        let pod_ips = Value::list(&self.pod_ips, |ip| Obj::default().put("ip", Value::str(&**ip)).done());
        let status = Obj::default()
            .nonempty_str("phase", phase_text(self))
            .nonempty_str("hostIP", self.host_ip.as_deref().unwrap_or_default())
            .nonempty_str("podIP", self.pod_ips.first().map(|ip| &**ip).unwrap_or_default())
            .nonempty_list("podIPs", pod_ips)
            .done();
        Envelope::new("Pod", "v1", self.meta(), annotations).unstructured(spec, status)
    }
}

/// The phase a template sees: empty when the view knows none, as Go's zero value.
fn phase_text(pod: &Pod) -> &'static str {
    match pod.phase {
        PodPhase::Unknown => "",
        phase => phase.as_str(),
    }
}

// --- contour-httpproxy and openshift-route sources ---

/// The views of the project kinds hold only what their sources read; every field a template reads comes
/// from the kept fields, rendered by the schema. `type_name` is the Go type external-dns executes on.
fn project_typed(meta: &Meta, kind: TemplateKind, api_version: &str, annotations: &StrMap) -> Value {
    let (type_name, spec, status) = match kind {
        TemplateKind::HttpProxy => ("*v1.HTTPProxy", "v1.HTTPProxySpec", "v1.HTTPProxyStatus"),
        _ => ("*v1.Route", "v1.RouteSpec", "v1.RouteStatus"),
    };
    Envelope::new(kind.api_kind(), api_version, meta, annotations).typed(
        type_name,
        Value::Struct(spec, vec![]),
        Value::Struct(status, vec![]),
    )
}

fn project_unstructured(meta: &Meta, kind: TemplateKind, api_version: &str, annotations: &StrMap) -> Value {
    Envelope::new(kind.api_kind(), api_version, meta, annotations)
        .unstructured(Obj::default().done(), Obj::default().done())
}

impl TemplateObject for HttpProxy {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(&self.meta, TemplateKind::HttpProxy, self.template_fields.as_deref())
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        project_typed(&self.meta, TemplateKind::HttpProxy, "projectcontour.io/v1", annotations)
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        project_unstructured(&self.meta, TemplateKind::HttpProxy, "projectcontour.io/v1", annotations)
    }
}

impl TemplateObject for OpenShiftRoute {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(
            &self.meta,
            TemplateKind::OpenShiftRoute,
            self.template_fields.as_deref(),
        )
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        project_typed(
            &self.meta,
            TemplateKind::OpenShiftRoute,
            "route.openshift.io/v1",
            annotations,
        )
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        project_unstructured(
            &self.meta,
            TemplateKind::OpenShiftRoute,
            "route.openshift.io/v1",
            annotations,
        )
    }
}

/// The API version the Istio kinds are shown in: external-dns reads them through Istio's v1 client.
const ISTIO_API_VERSION: &str = "networking.istio.io/v1";

/// An Istio Gateway's view holds its selector and its servers' hosts flattened; the servers as a template
/// reads them come from the kept fields, rendered by the schema.
impl TemplateObject for IstioGateway {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(&self.meta, TemplateKind::IstioGateway, self.template_fields.as_deref())
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let spec = Value::Struct("v1alpha3.Gateway", vec![("Selector", map_of(&self.selector))]);
        let status = Value::Struct("v1alpha1.IstioStatus", vec![]);
        Envelope::new("Gateway", ISTIO_API_VERSION, &self.meta, annotations).typed("*v1.Gateway", spec, status)
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        let spec = Obj::default().nonempty_list("selector", map_of(&self.selector)).done();
        Envelope::new("Gateway", ISTIO_API_VERSION, &self.meta, annotations).unstructured(spec, Obj::default().done())
    }
}

/// A VirtualService's view holds every field of its spec a template can read.
impl TemplateObject for VirtualService {
    fn parts(&self) -> TemplateParts<'_> {
        TemplateParts::new(
            &self.meta,
            TemplateKind::VirtualService,
            self.template_fields.as_deref(),
        )
    }

    fn typed(&self, annotations: &StrMap) -> Value {
        let spec = Value::Struct(
            "v1alpha3.VirtualService",
            vec![
                ("Hosts", strs(&self.hosts)),
                ("Gateways", strs(&self.gateways)),
                ("ExportTo", strs(&self.export_to)),
            ],
        );
        let status = Value::Struct("v1alpha1.IstioStatus", vec![]);
        Envelope::new("VirtualService", ISTIO_API_VERSION, &self.meta, annotations).typed(
            "*v1.VirtualService",
            spec,
            status,
        )
    }

    fn unstructured(&self, annotations: &StrMap) -> Value {
        let spec = Obj::default()
            .nonempty_list("hosts", strs(&self.hosts))
            .nonempty_list("gateways", strs(&self.gateways))
            .nonempty_list("exportTo", strs(&self.export_to))
            .done();
        Envelope::new("VirtualService", ISTIO_API_VERSION, &self.meta, annotations)
            .unstructured(spec, Obj::default().done())
    }
}
