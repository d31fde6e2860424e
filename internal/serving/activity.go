package serving

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// APIActivity remembers when the API server last answered any client of
// a rest.Config it wraps (Wrap): a response, or a watch event read from
// one. A process that talks to the API server every few seconds anyway (a
// pump pod renews or watches its Lease, its informers watch) then proves
// the server reachable without a request of its own per readiness probe
// (APIServerAnswered).
type APIActivity struct {
	clock clock.PassiveClock
	// last is the UnixNano of the last answer (0: none yet).
	last atomic.Int64
}

// NewAPIActivity returns an APIActivity on clk (nil: the real clock).
func NewAPIActivity(clk clock.PassiveClock) *APIActivity {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &APIActivity{clock: clk}
}

// Wrap makes every client of cfg (a copy is returned; cfg is unchanged)
// record its answers.
func (a *APIActivity) Wrap(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return activityTripper{next: rt, a: a} })
	return c
}

// LastAnswer is when the API server last answered (zero: never).
func (a *APIActivity) LastAnswer() time.Time {
	n := a.last.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (a *APIActivity) mark() { a.last.Store(a.clock.Now().UnixNano()) }

// answered reports whether a response of this status shows the API server
// up: anything but a server error or throttling (a 403 or a 409 is the
// server answering).
func answered(status int) bool {
	return status < http.StatusInternalServerError && status != http.StatusTooManyRequests
}

type activityTripper struct {
	next http.RoundTripper
	a    *APIActivity
}

func (t activityTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || !answered(resp.StatusCode) {
		return resp, err
	}
	t.a.mark()
	// A watch is one response whose events arrive in its body for minutes:
	// each read of it is an answer too.
	resp.Body = &activityBody{ReadCloser: resp.Body, a: t.a}
	return resp, nil
}

// WrappedRoundTripper lets client-go's debugging and TLS-cache helpers see
// through the wrapper.
func (t activityTripper) WrappedRoundTripper() http.RoundTripper { return t.next }

type activityBody struct {
	io.ReadCloser
	a *APIActivity
}

func (b *activityBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.a.mark()
	}
	return n, err
}

// APIServerAnswered is a readiness check that passes while the API server
// answered a client wrapped by a (APIActivity.Wrap) within fresh, and
// otherwise asks /version as APIServerReachable does (which, through a
// wrapped kube, counts as an answer too).
func APIServerAnswered(kube kubernetes.Interface, a *APIActivity, fresh time.Duration) func(*http.Request) error {
	return func(r *http.Request) error {
		if last := a.LastAnswer(); !last.IsZero() && a.clock.Since(last) < fresh {
			return nil
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
			return fmt.Errorf("API server unreachable (no answer for %s): %w", fresh, err)
		}
		return nil
	}
}
