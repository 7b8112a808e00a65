//! The Route53 API's XML documents (API version 2013-04-01), as serde types for quick-xml.
//!
//! Route53 validates request documents against its schema, which fixes the order of elements: the field
//! order of the request types below is that order and must not change. Answers are read leniently: unknown
//! elements are ignored and every list may be missing.

use serde::{Deserialize, Serialize};

/// The namespace every Route53 request document declares.
pub const NAMESPACE: &str = "https://route53.amazonaws.com/doc/2013-04-01/";

// ------------------------------------------------------------------------------------------ hosted zones

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListHostedZonesResponse {
    pub hosted_zones: HostedZones,
    pub is_truncated: bool,
    pub next_marker: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HostedZones {
    #[serde(rename = "HostedZone")]
    pub items: Vec<HostedZone>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct HostedZone {
    pub id: String,
    pub name: String,
    pub config: Option<HostedZoneConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct HostedZoneConfig {
    pub private_zone: bool,
}

// ----------------------------------------------------------------------------------------------- tags

#[derive(Debug, Serialize)]
#[serde(rename = "ListTagsForResourcesRequest")]
pub struct ListTagsForResourcesRequest<'a> {
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    #[serde(rename = "ResourceIds")]
    pub resource_ids: ResourceIds<'a>,
}

#[derive(Debug, Serialize)]
pub struct ResourceIds<'a> {
    #[serde(rename = "ResourceId")]
    pub items: Vec<&'a str>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListTagsForResourcesResponse {
    pub resource_tag_sets: ResourceTagSets,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ResourceTagSets {
    #[serde(rename = "ResourceTagSet")]
    pub items: Vec<ResourceTagSet>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ResourceTagSet {
    pub resource_id: String,
    pub tags: Tags,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Tags {
    #[serde(rename = "Tag")]
    pub items: Vec<Tag>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct Tag {
    pub key: String,
    pub value: String,
}

// ------------------------------------------------------------------------------------ record sets

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListResourceRecordSetsResponse {
    pub resource_record_sets: ResourceRecordSets,
    pub is_truncated: bool,
    pub next_record_name: Option<String>,
    pub next_record_type: Option<String>,
    pub next_record_identifier: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ResourceRecordSets {
    #[serde(rename = "ResourceRecordSet")]
    pub items: Vec<ResourceRecordSet>,
}

/// One record set, read and written. Field order is the schema's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ResourceRecordSet {
    pub name: String,
    #[serde(rename = "Type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_identifier: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo_location: Option<GeoLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_value_answer: Option<bool>,
    #[serde(rename = "TTL", skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_records: Option<ResourceRecords>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_target: Option<AliasTarget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo_proximity_location: Option<GeoProximityLocation>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceRecords {
    #[serde(rename = "ResourceRecord")]
    pub items: Vec<ResourceRecord>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ResourceRecord {
    pub value: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AliasTarget {
    #[serde(rename = "HostedZoneId")]
    pub hosted_zone_id: String,
    #[serde(rename = "DNSName")]
    pub dns_name: String,
    #[serde(rename = "EvaluateTargetHealth")]
    pub evaluate_target_health: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct GeoLocation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continent_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdivision_code: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GeoProximityLocation {
    #[serde(rename = "AWSRegion", skip_serializing_if = "Option::is_none")]
    pub aws_region: Option<String>,
    #[serde(rename = "LocalZoneGroup", skip_serializing_if = "Option::is_none")]
    pub local_zone_group: Option<String>,
    #[serde(rename = "Coordinates", skip_serializing_if = "Option::is_none")]
    pub coordinates: Option<Coordinates>,
    #[serde(rename = "Bias", skip_serializing_if = "Option::is_none")]
    pub bias: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct Coordinates {
    pub latitude: String,
    pub longitude: String,
}

// ------------------------------------------------------------------------------------------- changes

#[derive(Debug, Serialize)]
#[serde(rename = "ChangeResourceRecordSetsRequest")]
pub struct ChangeResourceRecordSetsRequest<'a> {
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    #[serde(rename = "ChangeBatch")]
    pub change_batch: ChangeBatch<'a>,
}

#[derive(Debug, Serialize)]
pub struct ChangeBatch<'a> {
    #[serde(rename = "Comment", skip_serializing_if = "Option::is_none")]
    pub comment: Option<&'a str>,
    #[serde(rename = "Changes")]
    pub changes: Changes<'a>,
}

#[derive(Debug, Serialize)]
pub struct Changes<'a> {
    #[serde(rename = "Change")]
    pub items: &'a [Change],
}

/// CREATE, UPSERT or DELETE of one record set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Change {
    pub action: Action,
    pub resource_record_set: ResourceRecordSet,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Action {
    Create,
    Upsert,
    Delete,
}

// ------------------------------------------------------------------------------------------- errors

/// `<ErrorResponse><Error><Code>…</Code><Message>…</Message></Error></ErrorResponse>`, and the
/// `InvalidChangeBatch` document that lists one message per refused change.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ErrorResponse {
    pub error: Option<ErrorBody>,
    /// `InvalidChangeBatch` answers carry their messages here instead.
    pub messages: Option<Messages>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Messages {
    #[serde(rename = "Message")]
    pub items: Vec<String>,
}

/// The code and message of an error document, whichever shape it has (`InvalidChangeBatch` is the name of
/// the root element there, not a `Code`).
pub fn parse_error(body: &str) -> Option<(String, String)> {
    let doc: ErrorResponse = quick_xml::de::from_str(body).ok()?;
    if let Some(e) = doc.error {
        return Some((e.code, e.message));
    }
    let messages = doc.messages?;
    let root = body
        .split('<')
        .map(|s| s.trim_start_matches('?'))
        .find(|s| !s.is_empty() && !s.starts_with("xml"))
        .and_then(|s| s.split([' ', '>', '/']).next())
        .unwrap_or("InvalidChangeBatch");
    Some((root.to_string(), messages.items.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_request_follows_the_schema_order() {
        let changes = [Change {
            action: Action::Create,
            resource_record_set: ResourceRecordSet {
                name: "a.example.com.".into(),
                kind: "A".into(),
                set_identifier: Some("blue".into()),
                weight: Some(10),
                ttl: Some(300),
                resource_records: Some(ResourceRecords {
                    items: vec![ResourceRecord {
                        value: "1.2.3.4".into(),
                    }],
                }),
                ..ResourceRecordSet::default()
            },
        }];
        let doc = ChangeResourceRecordSetsRequest {
            xmlns: NAMESPACE,
            change_batch: ChangeBatch {
                comment: None,
                changes: Changes { items: &changes },
            },
        };
        let xml = quick_xml::se::to_string(&doc).expect("a value");
        assert_eq!(
            xml,
            "<ChangeResourceRecordSetsRequest xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\">\
             <ChangeBatch><Changes><Change><Action>CREATE</Action><ResourceRecordSet><Name>a.example.com.</Name>\
             <Type>A</Type><SetIdentifier>blue</SetIdentifier><Weight>10</Weight><TTL>300</TTL><ResourceRecords>\
             <ResourceRecord><Value>1.2.3.4</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change>\
             </Changes></ChangeBatch></ChangeResourceRecordSetsRequest>"
        );
    }

    #[test]
    fn a_record_page_is_read_with_its_paging_marks() {
        let body = r#"<?xml version="1.0"?>
<ListResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/">
 <ResourceRecordSets>
  <ResourceRecordSet><Name>\052.example.com.</Name><Type>A</Type><SetIdentifier>x</SetIdentifier>
   <GeoLocation><CountryCode>DE</CountryCode></GeoLocation>
   <AliasTarget><HostedZoneId>Z2</HostedZoneId><DNSName>lb.elb.amazonaws.com.</DNSName><EvaluateTargetHealth>true</EvaluateTargetHealth></AliasTarget>
  </ResourceRecordSet>
  <ResourceRecordSet><Name>t.example.com.</Name><Type>TXT</Type><TTL>60</TTL>
   <ResourceRecords><ResourceRecord><Value>"a &amp; b"</Value></ResourceRecord><ResourceRecord><Value>"c"</Value></ResourceRecord></ResourceRecords>
  </ResourceRecordSet>
 </ResourceRecordSets>
 <IsTruncated>true</IsTruncated><NextRecordName>u.example.com.</NextRecordName><NextRecordType>A</NextRecordType>
 <NextRecordIdentifier>id</NextRecordIdentifier><MaxItems>2</MaxItems>
</ListResourceRecordSetsResponse>"#;
        let page: ListResourceRecordSetsResponse = quick_xml::de::from_str(body).expect("a value");
        assert_eq!(page.resource_record_sets.items.len(), 2);
        let alias = &page.resource_record_sets.items[0];
        assert_eq!(alias.name, "\\052.example.com.");
        assert_eq!(
            alias.geo_location.as_ref().expect("a value").country_code.as_deref(),
            Some("DE")
        );
        assert!(alias.alias_target.as_ref().expect("a value").evaluate_target_health);
        let txt = &page.resource_record_sets.items[1];
        let values: Vec<_> = txt
            .resource_records
            .as_ref()
            .expect("a value")
            .items
            .iter()
            .map(|r| r.value.as_str())
            .collect();
        assert_eq!(values, ["\"a & b\"", "\"c\""]);
        assert!(page.is_truncated);
        assert_eq!(page.next_record_identifier.as_deref(), Some("id"));
    }

    #[test]
    fn error_documents_of_both_shapes_are_read() {
        let throttled = "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>";
        assert_eq!(
            parse_error(throttled),
            Some(("Throttling".into(), "Rate exceeded".into()))
        );
        let batch = "<?xml version=\"1.0\"?>\n<InvalidChangeBatch xmlns=\"x\"><Messages><Message>one</Message><Message>two</Message></Messages></InvalidChangeBatch>";
        assert_eq!(
            parse_error(batch),
            Some(("InvalidChangeBatch".into(), "one; two".into()))
        );
        assert_eq!(parse_error("not xml at all"), None);
    }
}
