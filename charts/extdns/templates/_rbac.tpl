{{/*
The read rules the configured sources need, in external-dns's chart order (so the same sources give the same
ClusterRole), for one scope:
- "all": everything, for the ClusterRole of a cluster-wide install;
- "namespaced": the Role of a namespaced install, external-dns's chart's rules for it: what is watched in the
  source namespace (`--namespace`), and Gateways (and ListenerSets) when `gatewayNamespace` is not set;
- "cluster": what extdns watches outside any one namespace even when namespaced (Nodes for the service source
  when `rbac.namespacedNodeAccess`, Namespaces and ListenerSets for the Gateway API sources, Gateways unless
  `gatewayNamespace` is set), for the ClusterRole `<fullname>-namespaces` (external-dns's chart's name for the
  ClusterRole of a namespaced install, which holds Namespaces alone there).
Sources extdns does not have yet keep external-dns's rules, so the chart is ready when they come.
*/}}
{{- define "extdns.rules" -}}
{{- $v := .root.Values }}
{{- $s := $v.sources }}
{{- $all := eq .scope "all" }}
{{- $ns := or $all (eq .scope "namespaced") }}
{{- $cluster := or $all (eq .scope "cluster") }}
{{- $gateway := include "extdns.gatewaySources" .root }}
{{- $read := "[\"get\",\"watch\",\"list\"]" }}
{{- if and (or $all (and $cluster $v.rbac.namespacedNodeAccess)) (or (has "node" $s) (has "pod" $s) (has "service" $s) (has "contour-httpproxy" $s) (has "gloo-proxy" $s) (has "openshift-route" $s) (has "skipper-routegroup" $s)) }}
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["list","watch"]
{{- end }}
{{- if and $ns (or (has "pod" $s) (has "service" $s) (has "contour-httpproxy" $s) (has "gloo-proxy" $s) (has "openshift-route" $s) (has "skipper-routegroup" $s)) }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: {{ $read }}
{{- end }}
{{- /* extdns only: ambassador-host reads the Service a Host's `external-dns.ambassador-service` names, which
external-dns's chart forgets (its source then cannot read it). */}}
{{- if and $ns (or (has "service" $s) (has "contour-httpproxy" $s) (has "gloo-proxy" $s) (has "istio-gateway" $s) (has "istio-virtualservice" $s) (has "openshift-route" $s) (has "skipper-routegroup" $s) (has "ambassador-host" $s)) }}
- apiGroups: [""]
  resources: ["services"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "service" $s) }}
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (or (has "ingress" $s) (has "istio-gateway" $s) (has "istio-virtualservice" $s) (has "contour-httpproxy" $s) (has "openshift-route" $s) (has "skipper-routegroup" $s) (has "gloo-proxy" $s)) }}
- apiGroups: ["extensions","networking.k8s.io"]
  resources: ["ingresses"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (or (has "istio-gateway" $s) (has "istio-virtualservice" $s)) }}
- apiGroups: ["networking.istio.io"]
  resources: ["gateways"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "istio-virtualservice" $s) }}
- apiGroups: ["networking.istio.io"]
  resources: ["virtualservices"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "ambassador-host" $s) }}
- apiGroups: ["getambassador.io"]
  resources: ["hosts","ingresses"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "contour-httpproxy" $s) }}
- apiGroups: ["projectcontour.io"]
  resources: ["httpproxies"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "crd" $s) }}
{{- $crd := include "extdns.crdResource" .root | splitList "/" }}
- apiGroups: [{{ index $crd 0 | quote }}]
  resources: [{{ index $crd 1 | quote }}]
  verbs: {{ $read }}
- apiGroups: [{{ index $crd 0 | quote }}]
  resources: [{{ printf "%s/status" (index $crd 1) | quote }}]
  verbs: ["update"]
{{- end }}
{{- if and $ns (eq $v.registry "crd") }}
- apiGroups: ["externaldns.k8s.io"]
  resources: ["dnsrecords"]
  verbs: ["get","watch","list","create","update","delete"]
- apiGroups: ["externaldns.k8s.io"]
  resources: ["dnsrecords/status"]
  verbs: ["update"]
{{- end }}
{{- if $gateway }}
{{- /* extdns watches Gateways in gatewayNamespace (a Role there, below), else in every namespace; ListenerSets
and Namespaces in every namespace. A namespaced install's Role also has Gateways and ListenerSets when
gatewayNamespace is not set, as external-dns's chart's has. */}}
{{- if or $all (not $v.gatewayNamespace) }}
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways"]
  verbs: {{ $read }}
{{- end }}
{{- if and $v.enableGatewayListenerSets (or $cluster (not $v.gatewayNamespace)) }}
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["listenersets"]
  verbs: {{ $read }}
{{- end }}
{{- if $cluster }}
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: {{ $read }}
{{- end }}
{{- end }}
{{- if $ns }}
{{- range $route := list "httproutes" "grpcroutes" "tlsroutes" "tcproutes" "udproutes" }}
{{- if has (printf "gateway-%s" (trimSuffix "s" $route)) $s }}
- apiGroups: ["gateway.networking.k8s.io"]
  resources: [{{ $route | quote }}]
  verbs: {{ $read }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $ns (has "gloo-proxy" $s) }}
- apiGroups: ["gloo.solo.io","gateway.solo.io"]
  resources: ["proxies","virtualservices","gateways"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "kong-tcpingress" $s) }}
- apiGroups: ["configuration.konghq.com"]
  resources: ["tcpingresses"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "traefik-proxy" $s) }}
- apiGroups: ["traefik.containo.us","traefik.io"]
  resources: ["ingressroutes","ingressroutetcps","ingressrouteudps"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "openshift-route" $s) }}
- apiGroups: ["route.openshift.io"]
  resources: ["routes"]
  verbs: {{ $read }}
{{- end }}
{{- if and $ns (has "skipper-routegroup" $s) }}
- apiGroups: ["zalando.org"]
  resources: ["routegroups"]
  verbs: {{ $read }}
- apiGroups: ["zalando.org"]
  resources: ["routegroups/status"]
  verbs: ["patch","update"]
{{- end }}
{{- if and $ns (or (has "f5-virtualserver" $s) (has "f5-transportserver" $s)) }}
- apiGroups: ["cis.f5.com"]
  resources: ["virtualservers","transportservers"]
  verbs: {{ $read }}
{{- end }}
{{- if $ns }}
{{- with $v.rbac.additionalPermissions }}
{{ toYaml . }}
{{- end }}
{{- if $v.events.enabled }}
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create","patch"]
{{- end }}
{{- end }}
{{- /* extdns only: the provider objects of `dnsProviders` (cluster-wide even for a namespaced install: a
ClusterDNSProvider is cluster-scoped, and each provider's Secret is read by name where it names it). */}}
{{- if and $cluster $v.dnsProviders.enabled }}
- apiGroups: ["externaldns.k8s.io"]
  resources: ["dnsproviders","clusterdnsproviders"]
  verbs: ["get","watch","list","patch"]
- apiGroups: ["externaldns.k8s.io"]
  resources: ["dnsproviders/status","clusterdnsproviders/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}
{{- end }}
