//! The Go types external-dns executes templates on, as far as templates can read them: each field's Go
//! name, its JSON path and its type. Used twice: at startup to turn the field paths a template reads
//! into JSON paths to keep (and to reject a field the kind does not have), and at execution to render the
//! kept JSON as the Go value, with Go's zero values for what the object leaves out.
//!
//! The field lists follow k8s.io/api core/v1 and sigs.k8s.io/gateway-api apis/v1 and v1alpha2 (the
//! versions external-dns v0.22 reads). Route rules are not modelled: extdns never stores them (their
//! filter types change with every Gateway API release), so naming them is a startup error.

use std::collections::BTreeMap;

use extdns_informer::view::RouteKind;
use extdns_informer::{PathStep, ResourceKind};
use extdns_template::{FieldPath, Step, Value};
use serde_json::Value as Json;

/// The type of a field, as far as templates can tell.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    /// A string.
    Str,
    /// An integer.
    Int,
    /// A boolean.
    Bool,
    /// `metav1.Time`, printed as the API writes it.
    Time,
    /// `intstr.IntOrString`, printed as its int or string form.
    IntOrStr,
    /// A pointer: nil when the object leaves the field out.
    Ptr(&'static Ty),
    /// A slice of one type; `index` and `range` read into it.
    List(&'static Ty),
    /// `map[string]T`.
    Map(&'static Ty),
    /// A nested struct.
    Struct(&'static StructTy),
    /// Free-form data (`managedFields`), rendered as decoded JSON.
    Any,
    /// A field the type has but extdns does not store; the text says why.
    NotKept(&'static str),
}

/// A Go struct.
#[derive(Debug)]
pub struct StructTy {
    /// The Go type name, for messages: `v1.ServiceSpec`.
    pub name: &'static str,
    /// Its fields, in Go's order.
    pub fields: &'static [Field],
}

/// One field of a struct: its Go name, the JSON key it is stored under (empty for an embedded struct,
/// whose fields are promoted and stored inline) and its type.
#[derive(Debug)]
pub struct Field {
    /// The Go field name templates use (`.Spec.ClusterIP`).
    pub go: &'static str,
    /// The JSON field name the object is read by (`clusterIP`).
    pub json: &'static str,
    /// Its type.
    pub ty: Ty,
}

const fn f(go: &'static str, json: &'static str, ty: Ty) -> Field {
    Field { go, json, ty }
}

const STR: Ty = Ty::Str;
const INT: Ty = Ty::Int;
const BOOL: Ty = Ty::Bool;
const OPT_STR: Ty = Ty::Ptr(&Ty::Str);
const OPT_INT: Ty = Ty::Ptr(&Ty::Int);
const OPT_BOOL: Ty = Ty::Ptr(&Ty::Bool);
const STRS: Ty = Ty::List(&Ty::Str);
const STR_MAP: Ty = Ty::Map(&Ty::Str);

// ------------------------------------------------------------------------------------------ meta/v1

static TYPE_META: StructTy = StructTy {
    name: "v1.TypeMeta",
    fields: &[f("Kind", "kind", STR), f("APIVersion", "apiVersion", STR)],
};

static OWNER_REFERENCE: StructTy = StructTy {
    name: "v1.OwnerReference",
    fields: &[
        f("APIVersion", "apiVersion", STR),
        f("Kind", "kind", STR),
        f("Name", "name", STR),
        f("UID", "uid", STR),
        f("Controller", "controller", OPT_BOOL),
        f("BlockOwnerDeletion", "blockOwnerDeletion", OPT_BOOL),
    ],
};

static OBJECT_META: StructTy = StructTy {
    name: "v1.ObjectMeta",
    fields: &[
        f("Name", "name", STR),
        f("GenerateName", "generateName", STR),
        f("Namespace", "namespace", STR),
        f("SelfLink", "selfLink", STR),
        f("UID", "uid", STR),
        f("ResourceVersion", "resourceVersion", STR),
        f("Generation", "generation", INT),
        f("CreationTimestamp", "creationTimestamp", Ty::Time),
        f("DeletionTimestamp", "deletionTimestamp", Ty::Ptr(&Ty::Time)),
        f("DeletionGracePeriodSeconds", "deletionGracePeriodSeconds", OPT_INT),
        f("Labels", "labels", STR_MAP),
        f("Annotations", "annotations", STR_MAP),
        f(
            "OwnerReferences",
            "ownerReferences",
            Ty::List(&Ty::Struct(&OWNER_REFERENCE)),
        ),
        f("Finalizers", "finalizers", STRS),
        f("ManagedFields", "managedFields", Ty::List(&Ty::Any)),
        // Go templates call methods without arguments like fields; these getters are how generic code
        // (and so some templates) read metadata.
        f("GetName", "name", STR),
        f("GetNamespace", "namespace", STR),
        f("GetLabels", "labels", STR_MAP),
        f("GetAnnotations", "annotations", STR_MAP),
        f("GetUID", "uid", STR),
        f("GetGeneration", "generation", INT),
        f("GetResourceVersion", "resourceVersion", STR),
    ],
};

static CONDITION: StructTy = StructTy {
    name: "v1.Condition",
    fields: &[
        f("Type", "type", STR),
        f("Status", "status", STR),
        f("ObservedGeneration", "observedGeneration", INT),
        f("LastTransitionTime", "lastTransitionTime", Ty::Time),
        f("Reason", "reason", STR),
        f("Message", "message", STR),
    ],
};
const CONDITIONS: Ty = Ty::List(&Ty::Struct(&CONDITION));

/// A top-level object: TypeMeta and ObjectMeta embedded, then Spec and Status.
const fn object_fields(spec: &'static StructTy, status: &'static StructTy) -> [Field; 4] {
    [
        f("TypeMeta", "", Ty::Struct(&TYPE_META)),
        f("ObjectMeta", "metadata", Ty::Struct(&OBJECT_META)),
        f("Spec", "spec", Ty::Struct(spec)),
        f("Status", "status", Ty::Struct(status)),
    ]
}

// ------------------------------------------------------------------------------------------ core/v1

static SERVICE_PORT: StructTy = StructTy {
    name: "v1.ServicePort",
    fields: &[
        f("Name", "name", STR),
        f("Protocol", "protocol", STR),
        f("AppProtocol", "appProtocol", OPT_STR),
        f("Port", "port", INT),
        f("TargetPort", "targetPort", Ty::IntOrStr),
        f("NodePort", "nodePort", INT),
    ],
};

static CLIENT_IP_CONFIG: StructTy = StructTy {
    name: "v1.ClientIPConfig",
    fields: &[f("TimeoutSeconds", "timeoutSeconds", OPT_INT)],
};

static SESSION_AFFINITY_CONFIG: StructTy = StructTy {
    name: "v1.SessionAffinityConfig",
    fields: &[f("ClientIP", "clientIP", Ty::Ptr(&Ty::Struct(&CLIENT_IP_CONFIG)))],
};

static SERVICE_SPEC: StructTy = StructTy {
    name: "v1.ServiceSpec",
    fields: &[
        f("Ports", "ports", Ty::List(&Ty::Struct(&SERVICE_PORT))),
        f("Selector", "selector", STR_MAP),
        f("ClusterIP", "clusterIP", STR),
        f("ClusterIPs", "clusterIPs", STRS),
        f("Type", "type", STR),
        f("ExternalIPs", "externalIPs", STRS),
        f("SessionAffinity", "sessionAffinity", STR),
        f("LoadBalancerIP", "loadBalancerIP", STR),
        f("LoadBalancerSourceRanges", "loadBalancerSourceRanges", STRS),
        f("ExternalName", "externalName", STR),
        f("ExternalTrafficPolicy", "externalTrafficPolicy", STR),
        f("HealthCheckNodePort", "healthCheckNodePort", INT),
        f("PublishNotReadyAddresses", "publishNotReadyAddresses", BOOL),
        f(
            "SessionAffinityConfig",
            "sessionAffinityConfig",
            Ty::Ptr(&Ty::Struct(&SESSION_AFFINITY_CONFIG)),
        ),
        f("IPFamilies", "ipFamilies", STRS),
        f("IPFamilyPolicy", "ipFamilyPolicy", OPT_STR),
        f(
            "AllocateLoadBalancerNodePorts",
            "allocateLoadBalancerNodePorts",
            OPT_BOOL,
        ),
        f("LoadBalancerClass", "loadBalancerClass", OPT_STR),
        f("InternalTrafficPolicy", "internalTrafficPolicy", OPT_STR),
        f("TrafficDistribution", "trafficDistribution", OPT_STR),
    ],
};

static PORT_STATUS: StructTy = StructTy {
    name: "v1.PortStatus",
    fields: &[
        f("Port", "port", INT),
        f("Protocol", "protocol", STR),
        f("Error", "error", OPT_STR),
    ],
};

static LOAD_BALANCER_INGRESS: StructTy = StructTy {
    name: "v1.LoadBalancerIngress",
    fields: &[
        f("IP", "ip", STR),
        f("Hostname", "hostname", STR),
        f("IPMode", "ipMode", OPT_STR),
        f("Ports", "ports", Ty::List(&Ty::Struct(&PORT_STATUS))),
    ],
};

static LOAD_BALANCER_STATUS: StructTy = StructTy {
    name: "v1.LoadBalancerStatus",
    fields: &[f("Ingress", "ingress", Ty::List(&Ty::Struct(&LOAD_BALANCER_INGRESS)))],
};

static SERVICE_STATUS: StructTy = StructTy {
    name: "v1.ServiceStatus",
    fields: &[
        f("LoadBalancer", "loadBalancer", Ty::Struct(&LOAD_BALANCER_STATUS)),
        f("Conditions", "conditions", CONDITIONS),
    ],
};

static SERVICE: StructTy = StructTy {
    name: "v1.Service",
    fields: &object_fields(&SERVICE_SPEC, &SERVICE_STATUS),
};

// ------------------------------------------------------------------------------ gateway.networking.k8s.io

static PARENT_REFERENCE: StructTy = StructTy {
    name: "v1.ParentReference",
    fields: &[
        f("Group", "group", OPT_STR),
        f("Kind", "kind", OPT_STR),
        f("Namespace", "namespace", OPT_STR),
        f("Name", "name", STR),
        f("SectionName", "sectionName", OPT_STR),
        f("Port", "port", OPT_INT),
    ],
};

static COMMON_ROUTE_SPEC: StructTy = StructTy {
    name: "v1.CommonRouteSpec",
    fields: &[f("ParentRefs", "parentRefs", Ty::List(&Ty::Struct(&PARENT_REFERENCE)))],
};

const RULES: Ty = Ty::NotKept("extdns does not read route rules");

static HOSTNAME_ROUTE_SPEC: StructTy = StructTy {
    name: "v1.RouteSpec",
    fields: &[
        f("CommonRouteSpec", "", Ty::Struct(&COMMON_ROUTE_SPEC)),
        f("Hostnames", "hostnames", STRS),
        f("Rules", "rules", RULES),
    ],
};

static PORT_ROUTE_SPEC: StructTy = StructTy {
    name: "v1alpha2.RouteSpec",
    fields: &[
        f("CommonRouteSpec", "", Ty::Struct(&COMMON_ROUTE_SPEC)),
        f("Rules", "rules", RULES),
    ],
};

static ROUTE_PARENT_STATUS: StructTy = StructTy {
    name: "v1.RouteParentStatus",
    fields: &[
        f("ParentRef", "parentRef", Ty::Struct(&PARENT_REFERENCE)),
        f("ControllerName", "controllerName", STR),
        f("Conditions", "conditions", CONDITIONS),
    ],
};

static ROUTE_STATUS: StructTy = StructTy {
    name: "v1.RouteStatus",
    fields: &[f("Parents", "parents", Ty::List(&Ty::Struct(&ROUTE_PARENT_STATUS)))],
};

static ROUTE_STATUS_EMBEDDED: StructTy = StructTy {
    name: "v1.RouteStatus",
    fields: &[f("RouteStatus", "", Ty::Struct(&ROUTE_STATUS))],
};

static HOSTNAME_ROUTE: StructTy = StructTy {
    name: "v1.Route",
    fields: &object_fields(&HOSTNAME_ROUTE_SPEC, &ROUTE_STATUS_EMBEDDED),
};

static PORT_ROUTE: StructTy = StructTy {
    name: "v1alpha2.Route",
    fields: &object_fields(&PORT_ROUTE_SPEC, &ROUTE_STATUS_EMBEDDED),
};

// ------------------------------------------------------------------------------- networking.k8s.io/v1

static SERVICE_BACKEND_PORT: StructTy = StructTy {
    name: "v1.ServiceBackendPort",
    fields: &[f("Name", "name", STR), f("Number", "number", INT)],
};

static INGRESS_SERVICE_BACKEND: StructTy = StructTy {
    name: "v1.IngressServiceBackend",
    fields: &[
        f("Name", "name", STR),
        f("Port", "port", Ty::Struct(&SERVICE_BACKEND_PORT)),
    ],
};

static TYPED_LOCAL_OBJECT_REFERENCE: StructTy = StructTy {
    name: "v1.TypedLocalObjectReference",
    fields: &[
        f("APIGroup", "apiGroup", OPT_STR),
        f("Kind", "kind", STR),
        f("Name", "name", STR),
    ],
};

static INGRESS_BACKEND: StructTy = StructTy {
    name: "v1.IngressBackend",
    fields: &[
        f("Service", "service", Ty::Ptr(&Ty::Struct(&INGRESS_SERVICE_BACKEND))),
        f(
            "Resource",
            "resource",
            Ty::Ptr(&Ty::Struct(&TYPED_LOCAL_OBJECT_REFERENCE)),
        ),
    ],
};

static HTTP_INGRESS_PATH: StructTy = StructTy {
    name: "v1.HTTPIngressPath",
    fields: &[
        f("Path", "path", STR),
        f("PathType", "pathType", OPT_STR),
        f("Backend", "backend", Ty::Struct(&INGRESS_BACKEND)),
    ],
};

static HTTP_INGRESS_RULE_VALUE: StructTy = StructTy {
    name: "v1.HTTPIngressRuleValue",
    fields: &[f("Paths", "paths", Ty::List(&Ty::Struct(&HTTP_INGRESS_PATH)))],
};

static INGRESS_RULE_VALUE: StructTy = StructTy {
    name: "v1.IngressRuleValue",
    fields: &[f("HTTP", "http", Ty::Ptr(&Ty::Struct(&HTTP_INGRESS_RULE_VALUE)))],
};

static INGRESS_RULE: StructTy = StructTy {
    name: "v1.IngressRule",
    fields: &[
        f("Host", "host", STR),
        f("IngressRuleValue", "", Ty::Struct(&INGRESS_RULE_VALUE)),
    ],
};

static INGRESS_TLS: StructTy = StructTy {
    name: "v1.IngressTLS",
    fields: &[f("Hosts", "hosts", STRS), f("SecretName", "secretName", STR)],
};

static INGRESS_SPEC: StructTy = StructTy {
    name: "v1.IngressSpec",
    fields: &[
        f("IngressClassName", "ingressClassName", OPT_STR),
        f(
            "DefaultBackend",
            "defaultBackend",
            Ty::Ptr(&Ty::Struct(&INGRESS_BACKEND)),
        ),
        f("TLS", "tls", Ty::List(&Ty::Struct(&INGRESS_TLS))),
        f("Rules", "rules", Ty::List(&Ty::Struct(&INGRESS_RULE))),
    ],
};

static INGRESS_PORT_STATUS: StructTy = StructTy {
    name: "v1.IngressPortStatus",
    fields: &[
        f("Port", "port", INT),
        f("Protocol", "protocol", STR),
        f("Error", "error", OPT_STR),
    ],
};

static INGRESS_LOAD_BALANCER_INGRESS: StructTy = StructTy {
    name: "v1.IngressLoadBalancerIngress",
    fields: &[
        f("IP", "ip", STR),
        f("Hostname", "hostname", STR),
        f("Ports", "ports", Ty::List(&Ty::Struct(&INGRESS_PORT_STATUS))),
    ],
};

static INGRESS_LOAD_BALANCER_STATUS: StructTy = StructTy {
    name: "v1.IngressLoadBalancerStatus",
    fields: &[f(
        "Ingress",
        "ingress",
        Ty::List(&Ty::Struct(&INGRESS_LOAD_BALANCER_INGRESS)),
    )],
};

static INGRESS_STATUS: StructTy = StructTy {
    name: "v1.IngressStatus",
    fields: &[f(
        "LoadBalancer",
        "loadBalancer",
        Ty::Struct(&INGRESS_LOAD_BALANCER_STATUS),
    )],
};

static INGRESS: StructTy = StructTy {
    name: "v1.Ingress",
    fields: &object_fields(&INGRESS_SPEC, &INGRESS_STATUS),
};

// ------------------------------------------------------------------------------- core/v1 Node and Pod
//
// The fields of k8s.io/api core/v1 Node and Pod templates are known to read (names, addresses, the node a
// Pod runs on and its IPs, what schedules it); external-dns strips `status.conditions` from both before
// templates run, so they are not offered.

static TAINT: StructTy = StructTy {
    name: "v1.Taint",
    fields: &[
        f("Key", "key", STR),
        f("Value", "value", STR),
        f("Effect", "effect", STR),
    ],
};

static NODE_SPEC: StructTy = StructTy {
    name: "v1.NodeSpec",
    fields: &[
        f("PodCIDR", "podCIDR", STR),
        f("PodCIDRs", "podCIDRs", STRS),
        f("ProviderID", "providerID", STR),
        f("Unschedulable", "unschedulable", BOOL),
        f("Taints", "taints", Ty::List(&Ty::Struct(&TAINT))),
    ],
};

static NODE_ADDRESS: StructTy = StructTy {
    name: "v1.NodeAddress",
    fields: &[f("Type", "type", STR), f("Address", "address", STR)],
};

static NODE_SYSTEM_INFO: StructTy = StructTy {
    name: "v1.NodeSystemInfo",
    fields: &[
        f("MachineID", "machineID", STR),
        f("SystemUUID", "systemUUID", STR),
        f("BootID", "bootID", STR),
        f("KernelVersion", "kernelVersion", STR),
        f("OSImage", "osImage", STR),
        f("ContainerRuntimeVersion", "containerRuntimeVersion", STR),
        f("KubeletVersion", "kubeletVersion", STR),
        f("KubeProxyVersion", "kubeProxyVersion", STR),
        f("OperatingSystem", "operatingSystem", STR),
        f("Architecture", "architecture", STR),
    ],
};

static NODE_STATUS: StructTy = StructTy {
    name: "v1.NodeStatus",
    fields: &[
        f("Addresses", "addresses", Ty::List(&Ty::Struct(&NODE_ADDRESS))),
        f("NodeInfo", "nodeInfo", Ty::Struct(&NODE_SYSTEM_INFO)),
    ],
};

static NODE: StructTy = StructTy {
    name: "v1.Node",
    fields: &object_fields(&NODE_SPEC, &NODE_STATUS),
};

static CONTAINER: StructTy = StructTy {
    name: "v1.Container",
    fields: &[f("Name", "name", STR), f("Image", "image", STR)],
};

static POD_SPEC: StructTy = StructTy {
    name: "v1.PodSpec",
    fields: &[
        f("Containers", "containers", Ty::List(&Ty::Struct(&CONTAINER))),
        f("RestartPolicy", "restartPolicy", STR),
        f("DNSPolicy", "dnsPolicy", STR),
        f("NodeSelector", "nodeSelector", STR_MAP),
        f("ServiceAccountName", "serviceAccountName", STR),
        f("NodeName", "nodeName", STR),
        f("HostNetwork", "hostNetwork", BOOL),
        f("Hostname", "hostname", STR),
        f("Subdomain", "subdomain", STR),
        f("SchedulerName", "schedulerName", STR),
        f("PriorityClassName", "priorityClassName", STR),
    ],
};

static POD_IP: StructTy = StructTy {
    name: "v1.PodIP",
    fields: &[f("IP", "ip", STR)],
};

static HOST_IP: StructTy = StructTy {
    name: "v1.HostIP",
    fields: &[f("IP", "ip", STR)],
};

static POD_STATUS: StructTy = StructTy {
    name: "v1.PodStatus",
    fields: &[
        f("Phase", "phase", STR),
        f("Message", "message", STR),
        f("Reason", "reason", STR),
        f("NominatedNodeName", "nominatedNodeName", STR),
        f("HostIP", "hostIP", STR),
        f("HostIPs", "hostIPs", Ty::List(&Ty::Struct(&HOST_IP))),
        f("PodIP", "podIP", STR),
        f("PodIPs", "podIPs", Ty::List(&Ty::Struct(&POD_IP))),
        f("StartTime", "startTime", Ty::Ptr(&Ty::Time)),
        f("QOSClass", "qosClass", STR),
    ],
};

static POD: StructTy = StructTy {
    name: "v1.Pod",
    fields: &object_fields(&POD_SPEC, &POD_STATUS),
};

// --- contour-httpproxy and openshift-route sources ---

// ---------------------------------------------------------------------------- projectcontour.io/v1

const CONTOUR_NOT_KEPT: Ty = Ty::NotKept("extdns does not read an HTTPProxy's routing and TLS settings");

static CONTOUR_VIRTUAL_HOST: StructTy = StructTy {
    name: "v1.VirtualHost",
    fields: &[
        f("Fqdn", "fqdn", STR),
        f("TLS", "tls", CONTOUR_NOT_KEPT),
        f("Authorization", "authorization", CONTOUR_NOT_KEPT),
        f("CORSPolicy", "corsPolicy", CONTOUR_NOT_KEPT),
        f("RateLimitPolicy", "rateLimitPolicy", CONTOUR_NOT_KEPT),
        f("JWTProviders", "jwtProviders", CONTOUR_NOT_KEPT),
        f("IPAllowFilterPolicy", "ipAllowPolicy", CONTOUR_NOT_KEPT),
        f("IPDenyFilterPolicy", "ipDenyPolicy", CONTOUR_NOT_KEPT),
    ],
};

static CONTOUR_INCLUDE: StructTy = StructTy {
    name: "v1.Include",
    fields: &[
        f("Name", "name", STR),
        f("Namespace", "namespace", STR),
        f("Conditions", "conditions", CONTOUR_NOT_KEPT),
    ],
};

static HTTP_PROXY_SPEC: StructTy = StructTy {
    name: "v1.HTTPProxySpec",
    fields: &[
        f(
            "VirtualHost",
            "virtualhost",
            Ty::Ptr(&Ty::Struct(&CONTOUR_VIRTUAL_HOST)),
        ),
        f("Routes", "routes", CONTOUR_NOT_KEPT),
        f("TCPProxy", "tcpproxy", CONTOUR_NOT_KEPT),
        f("Includes", "includes", Ty::List(&Ty::Struct(&CONTOUR_INCLUDE))),
        f("IngressClassName", "ingressClassName", STR),
    ],
};

static HTTP_PROXY_STATUS: StructTy = StructTy {
    name: "v1.HTTPProxyStatus",
    fields: &[
        f("CurrentStatus", "currentStatus", STR),
        f("Description", "description", STR),
        f("LoadBalancer", "loadBalancer", Ty::Struct(&LOAD_BALANCER_STATUS)),
        f("Conditions", "conditions", CONDITIONS),
    ],
};

static HTTP_PROXY: StructTy = StructTy {
    name: "v1.HTTPProxy",
    fields: &object_fields(&HTTP_PROXY_SPEC, &HTTP_PROXY_STATUS),
};

// ---------------------------------------------------------------------------- route.openshift.io/v1

static ROUTE_TARGET_REFERENCE: StructTy = StructTy {
    name: "v1.RouteTargetReference",
    fields: &[
        f("Kind", "kind", STR),
        f("Name", "name", STR),
        f("Weight", "weight", OPT_INT),
    ],
};

static ROUTE_PORT: StructTy = StructTy {
    name: "v1.RoutePort",
    fields: &[f("TargetPort", "targetPort", Ty::IntOrStr)],
};

static OPENSHIFT_ROUTE_SPEC: StructTy = StructTy {
    name: "v1.RouteSpec",
    fields: &[
        f("Host", "host", STR),
        f("Subdomain", "subdomain", STR),
        f("Path", "path", STR),
        f("To", "to", Ty::Struct(&ROUTE_TARGET_REFERENCE)),
        f(
            "AlternateBackends",
            "alternateBackends",
            Ty::List(&Ty::Struct(&ROUTE_TARGET_REFERENCE)),
        ),
        f("Port", "port", Ty::Ptr(&Ty::Struct(&ROUTE_PORT))),
        f("TLS", "tls", Ty::NotKept("extdns does not read a Route's TLS settings")),
        f("WildcardPolicy", "wildcardPolicy", STR),
        f(
            "HTTPHeaders",
            "httpHeaders",
            Ty::NotKept("extdns does not read a Route's header actions"),
        ),
    ],
};

static ROUTE_INGRESS_CONDITION: StructTy = StructTy {
    name: "v1.RouteIngressCondition",
    fields: &[
        f("Type", "type", STR),
        f("Status", "status", STR),
        f("Reason", "reason", STR),
        f("Message", "message", STR),
        f("LastTransitionTime", "lastTransitionTime", Ty::Ptr(&Ty::Time)),
    ],
};

static ROUTE_INGRESS: StructTy = StructTy {
    name: "v1.RouteIngress",
    fields: &[
        f("Host", "host", STR),
        f("RouterName", "routerName", STR),
        f(
            "Conditions",
            "conditions",
            Ty::List(&Ty::Struct(&ROUTE_INGRESS_CONDITION)),
        ),
        f("WildcardPolicy", "wildcardPolicy", STR),
        f("RouterCanonicalHostname", "routerCanonicalHostname", STR),
    ],
};

static OPENSHIFT_ROUTE_STATUS: StructTy = StructTy {
    name: "v1.RouteStatus",
    fields: &[f("Ingress", "ingress", Ty::List(&Ty::Struct(&ROUTE_INGRESS)))],
};

static OPENSHIFT_ROUTE: StructTy = StructTy {
    name: "v1.Route",
    fields: &object_fields(&OPENSHIFT_ROUTE_SPEC, &OPENSHIFT_ROUTE_STATUS),
};

// ------------------------------------------------------------------------------ networking.istio.io

// Istio's Go types (istio.io/client-go networking/v1, protobuf messages from istio.io/api
// networking/v1alpha3), as far as extdns keeps them: the informer's Istio types hold only the fields the
// sources read, so a template can read those and nothing more of the spec.

static ISTIO_SERVER: StructTy = StructTy {
    name: "v1alpha3.Server",
    fields: &[f("Hosts", "hosts", STRS)],
};

static ISTIO_GATEWAY_SPEC: StructTy = StructTy {
    name: "v1alpha3.Gateway",
    fields: &[
        f("Servers", "servers", Ty::List(&Ty::Ptr(&Ty::Struct(&ISTIO_SERVER)))),
        f("Selector", "selector", STR_MAP),
    ],
};

static ISTIO_STATUS: StructTy = StructTy {
    name: "v1alpha1.IstioStatus",
    fields: &[],
};

static ISTIO_GATEWAY: StructTy = StructTy {
    name: "v1.Gateway",
    fields: &object_fields(&ISTIO_GATEWAY_SPEC, &ISTIO_STATUS),
};

static VIRTUAL_SERVICE_SPEC: StructTy = StructTy {
    name: "v1alpha3.VirtualService",
    fields: &[
        f("Hosts", "hosts", STRS),
        f("Gateways", "gateways", STRS),
        f("ExportTo", "exportTo", STRS),
    ],
};

static VIRTUAL_SERVICE: StructTy = StructTy {
    name: "v1.VirtualService",
    fields: &object_fields(&VIRTUAL_SERVICE_SPEC, &ISTIO_STATUS),
};

/// The kinds templates run on (external-dns executes `--fqdn-template` on Services and on the five route
/// kinds; `--fqdn-target-template` on Services).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TemplateKind {
    /// Services (`--fqdn-template`, `--fqdn-target-template`).
    Service,
    /// Routes of one kind.
    Route(RouteKind),
    /// Ingresses.
    Ingress,
    /// Nodes (the node source).
    Node,
    /// Pods (the pod source).
    Pod,
    // --- contour-httpproxy and openshift-route sources ---
    /// Contour HTTPProxies.
    HttpProxy,
    /// OpenShift Routes.
    OpenShiftRoute,
    /// Istio Gateways.
    IstioGateway,
    /// Istio VirtualServices.
    VirtualService,
}

impl TemplateKind {
    /// The API kind: `Service`, `HTTPRoute`, `Ingress`.
    pub fn api_kind(self) -> &'static str {
        match self {
            TemplateKind::Service => ResourceKind::Service.kind(),
            TemplateKind::Route(r) => r.kind(),
            TemplateKind::Ingress => ResourceKind::Ingress.kind(),
            TemplateKind::Node => ResourceKind::Node.kind(),
            TemplateKind::Pod => ResourceKind::Pod.kind(),
            // --- contour-httpproxy and openshift-route sources ---
            TemplateKind::HttpProxy => ResourceKind::HttpProxy.kind(),
            TemplateKind::OpenShiftRoute => ResourceKind::OpenShiftRoute.kind(),
            TemplateKind::IstioGateway => ResourceKind::IstioGateway.kind(),
            TemplateKind::VirtualService => ResourceKind::VirtualService.kind(),
        }
    }

    /// The Go type templates see for this kind.
    pub fn schema(self) -> &'static StructTy {
        match self {
            TemplateKind::Service => &SERVICE,
            TemplateKind::Route(RouteKind::Http | RouteKind::Grpc | RouteKind::Tls) => &HOSTNAME_ROUTE,
            TemplateKind::Route(RouteKind::Tcp | RouteKind::Udp) => &PORT_ROUTE,
            TemplateKind::Ingress => &INGRESS,
            TemplateKind::Node => &NODE,
            TemplateKind::Pod => &POD,
            // --- contour-httpproxy and openshift-route sources ---
            TemplateKind::HttpProxy => &HTTP_PROXY,
            TemplateKind::OpenShiftRoute => &OPENSHIFT_ROUTE,
            TemplateKind::IstioGateway => &ISTIO_GATEWAY,
            TemplateKind::VirtualService => &VIRTUAL_SERVICE,
        }
    }

    /// The kind's name, for messages.
    pub fn kind(self) -> &'static str {
        match self {
            TemplateKind::Service => "Service",
            TemplateKind::Route(r) => r.kind(),
            TemplateKind::Ingress => "Ingress",
            TemplateKind::Node => "Node",
            TemplateKind::Pod => "Pod",
            // --- contour-httpproxy and openshift-route sources ---
            TemplateKind::HttpProxy => "HTTPProxy",
            TemplateKind::OpenShiftRoute => "Route",
            TemplateKind::IstioGateway => "Gateway",
            TemplateKind::VirtualService => "VirtualService",
        }
    }
}

// ------------------------------------------------------------------------------------- path resolution

/// Why a field path does not exist in a kind: the path as written and what is wrong at which step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {kind} has {problem}")]
#[non_exhaustive]
pub struct NoSuchField {
    /// The path as written.
    pub path: String,
    /// The kind that lacks it (`Service`, `HTTPRoute`, ...).
    pub kind: &'static str,
    /// Where it leaves the kind's typed view.
    #[source]
    pub problem: PathProblem,
}

/// Where a field path leaves a schema, at the step that does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathProblem {
    /// A field the value at that step does not have.
    #[error("no field {field} in {within}")]
    NoField {
        /// The field as the path names it.
        field: String,
        /// What lacks it: a Go type (`v1.ServiceSpec`), `a list`, `a string`, `unstructured`, ...
        within: &'static str,
    },
    /// A `range` over a struct.
    #[error("no elements in {0} (it is a struct)")]
    RangeOverStruct(&'static str),
    /// A `range` over a scalar other than an integer.
    #[error("no elements in {0}")]
    NoElements(&'static str),
    /// A field extdns does not keep; the text says why.
    #[error("a field that cannot be read: {0}")]
    NotKept(&'static str),
}

/// How a path names fields: the typed view's Go names, or the unstructured retry's JSON keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Naming {
    Go,
    Json,
}

/// The JSON path a template path reads on `kind`, trying the typed view (Go names) first and the
/// unstructured view (JSON keys) second, as execution does. `None` in the result means "nothing to
/// keep" (the path reads only what every view has: name, namespace, labels, annotations, kind).
pub fn resolve(kind: TemplateKind, path: &FieldPath) -> Result<Option<Vec<PathStep>>, NoSuchField> {
    let typed = match resolve_in(kind.schema(), &path.steps, Naming::Go) {
        Ok(p) => return Ok(drop_view_fields(kind, p)),
        Err(problem) => problem,
    };
    match resolve_unstructured(kind, &path.steps) {
        Ok(p) => Ok(drop_view_fields(kind, p)),
        Err(_) => Err(NoSuchField {
            path: path.display(),
            kind: kind.kind(),
            problem: typed,
        }),
    }
}

/// Paths the views always hold need nothing kept. A Pod's view keeps only the annotations under the read
/// prefixes (Pods are the most numerous objects), so a template reading its annotations has them kept.
fn drop_view_fields(kind: TemplateKind, p: Vec<PathStep>) -> Option<Vec<PathStep>> {
    let key = |i: usize| match p.get(i) {
        Some(PathStep::Member(k)) => Some(k.as_str()),
        _ => None,
    };
    let always = match key(0) {
        None => false,
        Some("kind" | "apiVersion") => true,
        Some("metadata") => match key(1) {
            Some("name" | "namespace" | "labels") => true,
            Some("annotations") => kind != TemplateKind::Pod,
            _ => false,
        },
        Some(_) => false,
    };
    (!always).then_some(p)
}

fn resolve_unstructured(kind: TemplateKind, steps: &[Step]) -> Result<Vec<PathStep>, PathProblem> {
    let Some((Step::Field(first), rest)) = steps.split_first() else {
        return resolve_in(kind.schema(), steps, Naming::Json);
    };
    let (prefix, ty): (&[&str], Ty) = match first.as_str() {
        "Name" => (&["metadata", "name"], STR),
        "Namespace" => (&["metadata", "namespace"], STR),
        "Kind" => (&["kind"], STR),
        "APIVersion" => (&["apiVersion"], STR),
        "Labels" => (&["metadata", "labels"], STR_MAP),
        "Annotations" => (&["metadata", "annotations"], STR_MAP),
        "Metadata" => (&["metadata"], Ty::Struct(&OBJECT_META)),
        "Spec" | "Status" => {
            let key = if first == "Spec" { "spec" } else { "status" };
            let field = kind.schema().fields.iter().find(|f| f.json == key);
            let ty = field.map_or(Ty::Any, |f| f.ty);
            let mut out = vec![PathStep::Member(key.to_string())];
            out.extend(resolve_ty(ty, rest, Naming::Json)?);
            return Ok(out);
        }
        "Object" => return resolve_in(kind.schema(), rest, Naming::Json),
        other => {
            return Err(PathProblem::NoField {
                field: other.to_string(),
                within: "unstructured",
            });
        }
    };
    let mut out: Vec<PathStep> = prefix.iter().map(|k| PathStep::Member(k.to_string())).collect();
    out.extend(resolve_ty(ty, rest, Naming::Json)?);
    Ok(out)
}

fn resolve_in(st: &'static StructTy, steps: &[Step], naming: Naming) -> Result<Vec<PathStep>, PathProblem> {
    resolve_ty(Ty::Struct(st), steps, naming)
}

/// Finds a field by name, looking through embedded structs as Go's promotion does; returns the JSON
/// keys to it and its type.
fn find_field(st: &'static StructTy, name: &str, naming: Naming) -> Option<(Vec<&'static str>, Ty)> {
    for field in st.fields {
        let matches = match naming {
            Naming::Go => field.go == name,
            Naming::Json => !field.json.is_empty() && field.json == name,
        };
        if matches {
            let keys = if field.json.is_empty() {
                Vec::new()
            } else {
                vec![field.json]
            };
            return Some((keys, field.ty));
        }
    }
    for field in st.fields.iter().filter(|f| f.json.is_empty()) {
        if let Ty::Struct(inner) = field.ty
            && let Some(found) = find_field(inner, name, naming)
        {
            return Some(found);
        }
    }
    // ObjectMeta's fields are promoted too, although it has a JSON key of its own.
    if naming == Naming::Go
        && let Some(meta) = st.fields.iter().find(|f| f.go == "ObjectMeta")
        && let Ty::Struct(inner) = meta.ty
        && let Some((mut keys, ty)) = find_field(inner, name, naming)
    {
        keys.insert(0, meta.json);
        return Some((keys, ty));
    }
    None
}

fn resolve_ty(mut ty: Ty, steps: &[Step], naming: Naming) -> Result<Vec<PathStep>, PathProblem> {
    let mut out = Vec::new();
    for step in steps {
        while let Ty::Ptr(inner) = ty {
            ty = *inner;
        }
        ty = match (ty, step) {
            (Ty::Struct(st), Step::Field(name)) => {
                let Some((keys, field_ty)) = find_field(st, name, naming) else {
                    return Err(PathProblem::NoField {
                        field: name.clone(),
                        within: st.name,
                    });
                };
                out.extend(keys.into_iter().map(|k| PathStep::Member(k.to_string())));
                field_ty
            }
            (Ty::Map(value), Step::Field(key)) => {
                out.push(PathStep::Member(key.clone()));
                *value
            }
            (Ty::List(elem) | Ty::Map(elem), Step::Elements) => {
                out.push(PathStep::Elements);
                *elem
            }
            (Ty::Any, Step::Field(key)) => {
                out.push(PathStep::Member(key.clone()));
                Ty::Any
            }
            (Ty::Any, Step::Elements) => {
                out.push(PathStep::Elements);
                Ty::Any
            }
            // `range` over an integer counts; there is nothing below.
            (Ty::Int, Step::Elements) => return Ok(out),
            (Ty::NotKept(why), _) => return Err(PathProblem::NotKept(why)),
            (Ty::Struct(st), Step::Elements) => return Err(PathProblem::RangeOverStruct(st.name)),
            (Ty::List(_), Step::Field(name)) => {
                return Err(PathProblem::NoField {
                    field: name.clone(),
                    within: "a list",
                });
            }
            (scalar, Step::Field(name)) => {
                return Err(PathProblem::NoField {
                    field: name.clone(),
                    within: scalar_name(scalar),
                });
            }
            (scalar, Step::Elements) => return Err(PathProblem::NoElements(scalar_name(scalar))),
        };
    }
    if let Ty::NotKept(why) = ty {
        return Err(PathProblem::NotKept(why));
    }
    Ok(out)
}

fn scalar_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Str => "a string",
        Ty::Int => "an integer",
        Ty::Bool => "a bool",
        Ty::Time => "a time",
        Ty::IntOrStr => "an IntOrString",
        _ => "a value",
    }
}

/// The JSON paths to keep for `kind` (with whether each is read whole) from the paths a template reads,
/// and the paths the kind does not have.
pub fn field_tree_paths(kind: TemplateKind, paths: &[FieldPath]) -> (Vec<(Vec<PathStep>, bool)>, Vec<NoSuchField>) {
    let mut keep = Vec::new();
    let mut missing = Vec::new();
    for path in paths {
        match resolve(kind, path) {
            Ok(Some(json)) => keep.push((json, path.whole)),
            Ok(None) => {}
            Err(e) => missing.push(e),
        }
    }
    (keep, missing)
}

// ------------------------------------------------------------------------------------------ rendering

/// The Go value of a field of type `ty` stored as `json` (absent: Go's zero value).
pub fn render(ty: Ty, json: Option<&Json>) -> Value {
    let json = json.filter(|j| !j.is_null());
    match ty {
        Ty::Str => Value::str(json.and_then(Json::as_str).unwrap_or_default()),
        Ty::Int => Value::Int(json.and_then(Json::as_i64).unwrap_or(0)),
        Ty::Bool => Value::Bool(json.and_then(Json::as_bool).unwrap_or(false)),
        Ty::Time => Value::str(json.and_then(Json::as_str).unwrap_or("0001-01-01 00:00:00 +0000 UTC")),
        Ty::IntOrStr => match json {
            Some(Json::Number(n)) => Value::str(n.to_string()),
            Some(Json::String(s)) => Value::str(s.as_str()),
            _ => Value::str("0"),
        },
        Ty::Ptr(inner) => match json {
            None => Value::Nil,
            Some(j) => render(*inner, Some(j)),
        },
        Ty::List(elem) => Value::List(
            json.and_then(Json::as_array)
                .into_iter()
                .flatten()
                .map(|j| render(*elem, Some(j)))
                .collect(),
        ),
        Ty::Map(value) => Value::Map(
            json.and_then(Json::as_object)
                .into_iter()
                .flatten()
                .map(|(k, j)| (k.clone(), render(*value, Some(j))))
                .collect::<BTreeMap<_, _>>(),
        ),
        Ty::Struct(st) => render_struct(st, json),
        Ty::Any => json.map_or(Value::Nil, plain),
        Ty::NotKept(_) => Value::Nil,
    }
}

fn render_struct(st: &'static StructTy, json: Option<&Json>) -> Value {
    let mut fields = Vec::with_capacity(st.fields.len());
    let mut promoted = Vec::new();
    for field in st.fields {
        let value = if field.json.is_empty() {
            render(field.ty, json)
        } else {
            render(field.ty, json.and_then(|j| j.get(field.json)))
        };
        // Embedded structs (and ObjectMeta) lend their fields to the outer struct.
        if (field.json.is_empty() || field.go == "ObjectMeta")
            && let Value::Struct(_, inner) = &value
        {
            promoted.extend(inner.iter().cloned());
        }
        fields.push((field.go, value));
    }
    for (name, value) in promoted {
        if !fields.iter().any(|(n, _)| *n == name) {
            fields.push((name, value));
        }
    }
    Value::Struct(st.name, fields)
}

/// Decoded JSON as an unstructured object holds it.
pub fn plain(json: &Json) -> Value {
    match json {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => Value::str(s.as_str()),
        Json::Array(items) => Value::List(items.iter().map(plain).collect()),
        Json::Object(obj) => Value::Map(obj.iter().map(|(k, v)| (k.clone(), plain(v))).collect()),
    }
}

/// `base` with `over` laid on top: `over` wins where both have a value, structs and maps merge by name,
/// lists of the same length merge element by element.
pub fn overlay(base: Value, over: Value) -> Value {
    match (base, over) {
        (Value::Struct(_, mut base_fields), Value::Struct(over_name, over_fields)) => {
            // The view's fields first, in its order (what printing a whole struct shows stays as it
            // was), then the fields only the full type has.
            let mut fields = Vec::with_capacity(base_fields.len().max(over_fields.len()));
            for (n, v) in over_fields {
                let merged = match base_fields.iter().position(|(f, _)| *f == n) {
                    Some(i) => overlay(base_fields.remove(i).1, v),
                    None => v,
                };
                fields.push((n, merged));
            }
            fields.extend(base_fields);
            // The view's name: it says pointer or not as external-dns's types do.
            Value::Struct(over_name, fields)
        }
        (Value::Map(mut entries), Value::Map(over_entries)) => {
            for (k, v) in over_entries {
                let merged = match entries.remove(&k) {
                    Some(old) => overlay(old, v),
                    None => v,
                };
                entries.insert(k, merged);
            }
            Value::Map(entries)
        }
        (Value::List(items), Value::List(over_items)) if items.len() == over_items.len() => {
            Value::List(items.into_iter().zip(over_items).map(|(a, b)| overlay(a, b)).collect())
        }
        (_, over) => over,
    }
}
