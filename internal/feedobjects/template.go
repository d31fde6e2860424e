package feedobjects

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// AnnotationTemplateHash on a pump Deployment is a digest of the pod
// template the operator last wrote into it (see SetTemplate).
const AnnotationTemplateHash = "flightfeed.aero/template-hash"

// SetTemplate puts the rendered pod template into dep unless dep already
// runs it. The API server fills defaults into a stored template
// (terminationMessagePath, protocols, probe thresholds, ...), so the
// rendering never equals it, and writing it back at every reconcile was a
// PUT per Deployment status change that changed nothing. dep runs the
// rendering when it was last written from the same rendering (the hash
// annotation: a field the rendering dropped changes the hash) and still
// holds every field the rendering sets (an edit of the pods' template by
// hand is put back).
func SetTemplate(dep *appsv1.Deployment, want corev1.PodTemplateSpec) {
	hash := templateHash(want)
	if dep.Annotations[AnnotationTemplateHash] == hash && equality.Semantic.DeepDerivative(want, dep.Spec.Template) {
		return
	}
	dep.Spec.Template = want
	if dep.Annotations == nil {
		dep.Annotations = map[string]string{}
	}
	dep.Annotations[AnnotationTemplateHash] = hash
}

// templateHash is a digest of a rendered pod template (encoding/json
// writes map keys sorted: the same rendering, the same hash).
func templateHash(t corev1.PodTemplateSpec) string {
	b, err := json.Marshal(t)
	if err != nil {
		return "" // never equal to a stored hash: the template is written
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
