package kubetest

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podIPEnv names the address hack/test-env.sh gives the tests for
// listeners the API server must reach as if they were pods.
const podIPEnv = "FLIGHTFEED_TEST_POD_IP"

// PodIP is an address of this machine the API server may proxy to: not
// loopback (Endpoints refuse it), on an interface the test environment
// made (hack/test-env.sh's test_env_pod_address).
func PodIP(t testing.TB) string {
	t.Helper()
	ip := os.Getenv(podIPEnv)
	if ip == "" {
		t.Fatal("kubetest: " + podIPEnv + " is not set; run the suite with `make test` " +
			"(hack/test-env.sh makes the address: source hack/test-env.sh && test_env_pod_address)")
	}
	return ip
}

// ServeAsPod makes envtest's API server route the Service ns/service's
// port portName to ip:port, as the endpoints controller would for a pod
// that listens there: envtest runs no controllers and no kubelet, so the
// test writes what they would — a Pod object whose status holds ip, the
// Service (no selector, so nothing rewrites its endpoints), its Endpoints
// and EndpointSlice naming the pod. The API server's service proxy then
// dials ip:port.
func ServeAsPod(t testing.TB, c client.Client, ns, service, portName, ip string, port int32) {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: service + "-0"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "pump", Image: "flightfeed:test", Ports: []corev1.ContainerPort{{Name: portName, ContainerPort: port}}}},
	}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("kubetest: pod %s: %v", pod.Name, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatalf("kubetest: pod %s status: %v", pod.Name, err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: service}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: portName, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}},
	}}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatalf("kubetest: service %s: %v", service, err)
	}
	ref := &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID}
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: service}, Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // the service proxy reads Endpoints
		Addresses: []corev1.EndpointAddress{{IP: ip, TargetRef: ref}},
		Ports:     []corev1.EndpointPort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP}},
	}}}
	if err := c.Create(ctx, eps); err != nil {
		t.Fatalf("kubetest: endpoints %s: %v", service, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: service + "-test", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, TargetRef: ref,
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := c.Create(ctx, slice); err != nil {
		t.Fatalf("kubetest: endpointslice %s: %v", service, err)
	}
}
