{{/*
The few kustomize features cronjobs/ uses, so that this chart renders cronjobs/ itself rather
than a copy of it: `resources` (files and directories), `components`, JSON 6902 `patches` with a
target by kind, name and group, `labels`, `images`. Each takes the kustomization's directory
(`dir`, under the chart) and its text or a kustomization of the chart's own (`k`), and adds
what it renders to `acc.objs`. Any other kustomize field fails the render. tests/deploy/test_helm_chart.py holds every combination equal
to what `kubectl kustomize` renders of its twin.
*/}}
{{- define "gcjob.kustomize" -}}
{{- $root := .root -}}
{{- $k := .k | default (fromYaml ($root.Files.Get (printf "%s/kustomization.yaml" .dir))) -}}
{{- range $field, $_ := $k -}}
  {{- if not (has $field (list "apiVersion" "kind" "resources" "components" "patches" "labels" "images")) -}}
    {{- fail (printf "%s: the chart renders no kustomize %q (templates/_kustomize.tpl)" $.dir $field) -}}
  {{- end -}}
{{- end -}}
{{- /* A component works on what the kustomization that lists it has rendered so far. */ -}}
{{- $mine := dict "objs" (ternary .acc.objs list (hasKey . "component")) -}}
{{- range $res := $k.resources | default list -}}
  {{- $path := clean (printf "%s/%s" $.dir $res) -}}
  {{- if hasSuffix ".yaml" $path -}}
    {{- range $doc := splitList "\n---\n" ($root.Files.Get $path) -}}
      {{- $obj := fromYaml $doc -}}
      {{- if $obj -}}{{- $_ := set $mine "objs" (append $mine.objs $obj) -}}{{- end -}}
    {{- end -}}
  {{- else -}}
    {{- include "gcjob.kustomize" (dict "root" $root "dir" $path "acc" $mine) -}}
  {{- end -}}
{{- end -}}
{{- range $component := $k.components | default list -}}
  {{- include "gcjob.kustomize" (dict "root" $root "dir" (clean (printf "%s/%s" $.dir $component)) "acc" $mine "component" true) -}}
{{- end -}}
{{- range $patch := $k.patches | default list -}}
  {{- $t := $patch.target -}}
  {{- $ops := fromYamlArray ($patch.patch | default "") -}}
  {{- range $op := $ops -}}
    {{- if not (and $t (kindIs "map" $op) (hasKey $op "op")) -}}
      {{- fail (printf "%s: the chart renders only JSON 6902 patches written inline, with a target" $.dir) -}}
    {{- end -}}
  {{- end -}}
  {{- range $obj := $mine.objs -}}
    {{- $group := regexReplaceAll "^(([^/]*)/)?[^/]*$" $obj.apiVersion "${2}" -}}
    {{- if and (eq $t.kind $obj.kind) (or (not $t.name) (eq $t.name $obj.metadata.name)) (or (not (hasKey $t "group")) (eq $t.group $group)) -}}
      {{- include "gcjob.jsonpatch" (dict "obj" $obj "ops" $ops) -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- range $obj := $mine.objs -}}
  {{- range $labels := $k.labels | default list -}}
    {{- if or $labels.includeSelectors $labels.includeTemplates -}}
      {{- fail (printf "%s: the chart renders labels of metadata only" $.dir) -}}
    {{- end -}}
    {{- $meta := $obj.metadata -}}
    {{- $_ := set $meta "labels" (merge (deepCopy $labels.pairs) ($meta.labels | default dict)) -}}
  {{- end -}}
  {{- range $image := $k.images | default list -}}
    {{- include "gcjob.image" (dict "obj" $obj "from" $image.name "to" (printf "%s:%s" $image.newName $image.newTag)) -}}
  {{- end -}}
{{- end -}}
{{- $_ := set .acc "objs" (ternary $mine.objs (concat .acc.objs $mine.objs) (hasKey . "component")) -}}
{{- end -}}

{{/* Every container of `obj` whose image is `from` (all when `from` is empty) runs `to`. */}}
{{- define "gcjob.image" -}}
{{- $spec := .obj.spec | default dict -}}
{{- $pod := dig "jobTemplate" "spec" "template" "spec" (dig "template" "spec" dict $spec) $spec -}}
{{- range $container := $pod.containers | default list -}}
  {{- if or (not $.from) (eq $container.image $.from) -}}{{- $_ := set $container "image" $.to -}}{{- end -}}
{{- end -}}
{{- end -}}

{{/*
A JSON Patch (RFC 6902) of `ops` applied to `obj` in place: add, remove, replace and test, as
cronjobs/ writes them (a list's element by index or `-`, a map's key, `~1` for `/`).
*/}}
{{- define "gcjob.jsonpatch" -}}
{{- range $op := .ops -}}
  {{- $parts := list -}}
  {{- range $p := rest (splitList "/" $op.path) -}}{{- $parts = append $parts ($p | replace "~1" "/" | replace "~0" "~") -}}{{- end -}}
  {{- $holder := dict "node" $.obj -}}
  {{- $key := "node" -}}
  {{- $parent := $.obj -}}
  {{- range $p := initial $parts -}}
    {{- $holder = $parent -}}
    {{- $key = $p -}}
    {{- if kindIs "slice" $parent -}}{{- $parent = index $parent (atoi $p) -}}{{- else -}}{{- $parent = index $parent $p -}}{{- end -}}
  {{- end -}}
  {{- $last := last $parts -}}
  {{- if kindIs "slice" $parent -}}
    {{- $at := ternary (len $parent) (atoi $last) (eq $last "-") -}}
    {{- if eq $op.op "test" -}}
      {{- if ne (toJson (index $parent $at)) (toJson $op.value) -}}{{- fail (printf "patch test failed at %s" $op.path) -}}{{- end -}}
    {{- else -}}
      {{- $new := list -}}
      {{- range $i, $item := $parent -}}
        {{- if and (eq $i $at) (eq $op.op "add") -}}{{- $new = append $new $op.value -}}{{- end -}}
        {{- if ne $i $at -}}{{- $new = append $new $item -}}{{- else if eq $op.op "replace" -}}{{- $new = append $new $op.value -}}{{- else if eq $op.op "add" -}}{{- $new = append $new $item -}}{{- end -}}
      {{- end -}}
      {{- if and (eq $op.op "add") (eq $at (len $parent)) -}}{{- $new = append $new $op.value -}}{{- end -}}
      {{- if kindIs "slice" $holder -}}{{- fail (printf "patch at %s: a list in a list" $op.path) -}}{{- end -}}
      {{- $_ := set $holder $key $new -}}
    {{- end -}}
  {{- else if eq $op.op "test" -}}
    {{- if ne (toJson (index $parent $last)) (toJson $op.value) -}}{{- fail (printf "patch test failed at %s" $op.path) -}}{{- end -}}
  {{- else if eq $op.op "remove" -}}
    {{- $_ := unset $parent $last -}}
  {{- else -}}
    {{- $_ := set $parent $last $op.value -}}
  {{- end -}}
{{- end -}}
{{- end -}}
