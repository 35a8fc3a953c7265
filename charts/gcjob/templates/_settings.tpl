{{/*
cronjobs/components/settings, for `image` and `lockNamespace`: the image of every gcjob
container; --lock-namespace of the CronJob and the rollout Job; the namespace of the Lease Role,
its binding and the hub ServiceAccounts, and of the bindings' ServiceAccount subjects (the
objects of the ServiceAccount variants, by their component label).
*/}}
{{- define "gcjob.settings" -}}
{{- $ns := .lockNamespace -}}
{{- $movable := list "hub-rbac-serviceaccount" "hub-restore" -}}
{{- range $obj := .objs -}}
  {{- include "gcjob.image" (dict "obj" $obj "from" "" "to" $.image) -}}
  {{- if or (and (eq $obj.kind "CronJob") (eq $obj.metadata.name "gcjob")) (and (eq $obj.kind "Job") (eq $obj.metadata.name "gcjob-rollout")) -}}
    {{- $pod := dig "jobTemplate" "spec" "template" "spec" (dig "template" "spec" dict $obj.spec) $obj.spec -}}
    {{- range $container := $pod.containers -}}
      {{- $args := list -}}
      {{- range $arg := $container.args -}}
        {{- $args = append $args (ternary (printf "--lock-namespace=%s" $ns) $arg (eq $arg "--lock-namespace=default")) -}}
      {{- end -}}
      {{- $_ := set $container "args" $args -}}
    {{- end -}}
  {{- end -}}
  {{- $component := dig "labels" "app.kubernetes.io/component" "" $obj.metadata -}}
  {{- if and (has $obj.kind (list "Role" "RoleBinding")) (eq $obj.metadata.name "gcjob-lease") -}}
    {{- $_ := set $obj.metadata "namespace" $ns -}}
  {{- end -}}
  {{- if has $component $movable -}}
    {{- if eq $obj.kind "ServiceAccount" -}}{{- $_ := set $obj.metadata "namespace" $ns -}}{{- end -}}
    {{- if has $obj.kind (list "ClusterRoleBinding" "RoleBinding") -}}
      {{- $_ := set (first $obj.subjects) "namespace" $ns -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- end -}}
