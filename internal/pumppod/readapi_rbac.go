package pumppod

// The manager authenticates and authorizes the callers of its read API and
// of its secure /metrics through the API server (serving.Access): a
// TokenReview per bearer token and a SubjectAccessReview per decision, both
// cached briefly. These rights let it ask; they grant nothing else.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
