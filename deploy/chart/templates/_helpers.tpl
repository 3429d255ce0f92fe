{{- define "gangsched.selectorLabels" -}}
app.kubernetes.io/name: gangsched
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gangsched.labels" -}}
{{ include "gangsched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}
