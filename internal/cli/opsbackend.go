package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/store"
)

// opsBackend is where dead, parked and replay read and record: the feed's
// database itself (--config, no Kubernetes), or the feed's read API served
// by its pump pods, reached through the API server's service proxy (--feed),
// so a person needs Kubernetes RBAC and a token for the feed, never its
// Secrets or a route to its database.
type opsBackend interface {
	// Location is the feed's time zone, for the tables' times.
	Location() *time.Location
	Dead(ctx context.Context, f store.DeadFilter) ([]store.DeadMessage, error)
	Parked(ctx context.Context, limit int) ([]store.ParkedEvent, error)
	// Redeliver makes the parked events ids (every one when ids is empty)
	// PENDING again and returns those it did.
	Redeliver(ctx context.Context, ids []int64) ([]int64, error)
	RequestReplay(ctx context.Context, id int64, policy string) (store.ReplayRequest, error)
	Replay(ctx context.Context, id int64) (store.ReplayRequest, error)
	// Rerequest releases day's FAILED full-day request so the pump asks
	// for the day again; it returns how many it released (0: not held).
	Rerequest(ctx context.Context, day string) (int64, error)
	Close()
}

// tokenEnv holds a token for the feed's read API when --token-file is not
// given.
const tokenEnv = "FLIGHTFEED_TOKEN"

// tokenTTL is how long a token --service-account makes lives.
const tokenTTL = 10 * time.Minute

// feedSource is the flags that name a feed and reach it: the positional
// NAME (or NS/NAME; --feed too on the flightfeed binary), kubectl's flags,
// and the token for the feed's read API (--token-file, $FLIGHTFEED_TOKEN or
// --service-account); on the flightfeed binary, --config F instead works on
// the database directly, without Kubernetes.
type feedSource struct {
	cf             *kubeFlagSet
	config, feed   *string // nil in the plugin
	tokenFile      *string
	serviceAccount *string
}

// addFeedSource adds the feedSource flags to cmd, --config only when
// withConfig (and never in the plugin), and completes NAME with the
// FlightFeeds of the namespace.
func addFeedSource(cmd *cobra.Command, m mode, withConfig bool) *feedSource {
	f := cmd.Flags()
	s := &feedSource{cf: kubeFlags(cmd, m)}
	if !m.plugin() {
		if withConfig {
			s.config = f.String("config", "", "feed configuration file (YAML, the FlightFeed spec's shape with inline DSNs): work on the database directly, without Kubernetes")
		}
		s.feed = f.String("feed", "", "the FlightFeed, NS/NAME or NAME (the same as the positional NAME)")
	}
	s.tokenFile = f.String("token-file", "", "file holding a token for the feed's read API, made with kubectl create token SA --audience flightfeed.aero/NS/NAME (default: $"+tokenEnv+")")
	s.serviceAccount = f.String("service-account", "", "make a 10-minute token for the feed's read API as this ServiceAccount of the feed's namespace (needs create on serviceaccounts/token)")
	cmd.ValidArgsFunction = completeFeedNames(s.cf)
	return s
}

// configFile is --config, "" when not given or not offered.
func (s *feedSource) configFile() string {
	if s.config == nil {
		return ""
	}
	return *s.config
}

// named is the feed NAME or --feed names, "" when none.
func (s *feedSource) named(args []string) (string, error) {
	feedFlag := ""
	if s.feed != nil {
		feedFlag = *s.feed
	}
	return feedArgument(args, feedFlag)
}

// kube says whether the command line asks for the cluster.
func (s *feedSource) kube(args []string) bool {
	name, _ := s.named(args)
	return name != "" || s.cf.changed() || *s.tokenFile != "" || *s.serviceAccount != ""
}

// key is the named feed and the kubeconfig to reach it.
func (s *feedSource) key(args []string) (*rest.Config, types.NamespacedName, error) {
	name, err := s.named(args)
	if err != nil {
		return nil, types.NamespacedName{}, err
	}
	if name == "" {
		what := "NAME (the FlightFeed)"
		if s.config != nil {
			what = "--config F or NAME (the FlightFeed)"
		}
		return nil, types.NamespacedName{}, usageError{errors.New(what + " is required")}
	}
	cfg, ns, err := s.cf.restConfig()
	if err != nil {
		return nil, types.NamespacedName{}, err
	}
	key, err := parseFeedKey(name, ns)
	if err != nil {
		return nil, types.NamespacedName{}, usageError{err}
	}
	return cfg, key, nil
}

// api reaches the named feed's read API through the service proxy.
func (s *feedSource) api(ctx context.Context, args []string) (*feedAPI, error) {
	if *s.tokenFile != "" && *s.serviceAccount != "" {
		return nil, usageError{errors.New("give either --token-file or --service-account, not both")}
	}
	cfg, key, err := s.key(args)
	if err != nil {
		return nil, err
	}
	return dialFeedAPI(ctx, cfg, key, *s.tokenFile, *s.serviceAccount)
}

// ops is where dead, parked and replay work: the database of --config, or
// the named feed's read API.
func (s *feedSource) ops(ctx context.Context, cmd *cobra.Command, args []string) (opsBackend, error) {
	path := s.configFile()
	switch {
	case path != "" && s.kube(args):
		return nil, usageError{errors.New("give either --config F (the database directly) or --feed NAME (its read API in the cluster), not both")}
	case path != "":
		feed, err := config.Load(path)
		if err != nil {
			return nil, usageError{err}
		}
		st, err := openStore(ctx, feed)
		if err != nil {
			return nil, err
		}
		return storeBackend{feed: feed, s: st}, nil
	}
	api, err := s.api(ctx, args)
	if err != nil {
		return nil, err
	}
	api.warn = cmd.ErrOrStderr()
	return api, nil
}

// storeBackend works on the feed's database (--config).
type storeBackend struct {
	feed *config.Feed
	s    *store.Store
}

func (b storeBackend) Location() *time.Location { return b.feed.Location }
func (b storeBackend) Dead(ctx context.Context, f store.DeadFilter) ([]store.DeadMessage, error) {
	return b.s.DeadMessages(ctx, f)
}
func (b storeBackend) Parked(ctx context.Context, limit int) ([]store.ParkedEvent, error) {
	return b.s.ParkedEvents(ctx, limit)
}
func (b storeBackend) Redeliver(ctx context.Context, ids []int64) ([]int64, error) {
	return b.s.RedeliverParked(ctx, ids)
}
func (b storeBackend) RequestReplay(ctx context.Context, id int64, policy string) (store.ReplayRequest, error) {
	return b.s.RequestReplay(ctx, id, policy)
}
func (b storeBackend) Replay(ctx context.Context, id int64) (store.ReplayRequest, error) {
	return b.s.Replay(ctx, id)
}
func (b storeBackend) Rerequest(ctx context.Context, day string) (int64, error) {
	return b.s.ReleaseFailedRequests(ctx, requestKind, day)
}
func (b storeBackend) Close() { b.s.Close() }

// feedAPI asks a feed's read API through the API server's service proxy:
// /api/v1/namespaces/NS/services/https:<NAME>-pump:api/proxy/api/v1/feeds/NS/NAME/…
// The API server authenticates the kubeconfig's user and authorizes it for
// services/proxy (get; create for the POSTs) on the feed's Service; the pump
// pod then checks the token in readapi.TokenHeader (audience
// feednames.Audience) and its user's permission on the feed.
type feedAPI struct {
	rest  rest.Interface
	key   types.NamespacedName
	token string
	loc   *time.Location
	// warn receives what the user should know beside the answer (a list
	// cut at the read API's maximum); nil: nothing is said.
	warn io.Writer
}

// dialFeedAPI finds the FlightFeed (for its time zone, and to say "not
// found" before anything else) and gets the token.
func dialFeedAPI(ctx context.Context, cfg *rest.Config, key types.NamespacedName, tokenFile, serviceAccount string) (*feedAPI, error) {
	c, err := statusClient(cfg)
	if err != nil {
		return nil, err
	}
	var ff v1alpha1.FlightFeed
	if err := c.Get(ctx, key, &ff); err != nil {
		return nil, fmt.Errorf("FlightFeed %s: %w", key, err)
	}
	loc, err := time.LoadLocation(ff.Spec.Airport.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("FlightFeed %s: airport.timeZone %q: %w", key, ff.Spec.Airport.TimeZone, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the API server %s: %w", cfg.Host, err)
	}
	token, err := readAPIToken(ctx, kube, key, tokenFile, serviceAccount)
	if err != nil {
		return nil, err
	}
	return &feedAPI{rest: kube.CoreV1().RESTClient(), key: key, token: token, loc: loc}, nil
}

// readAPIToken is the token from --token-file, $FLIGHTFEED_TOKEN, or one
// made for --service-account with the feed's audience.
func readAPIToken(ctx context.Context, kube kubernetes.Interface, key types.NamespacedName, tokenFile, serviceAccount string) (string, error) {
	audience := feednames.Audience(key)
	switch {
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile) //nolint:gosec // G304: the user names the file to read their own token from
		if err != nil {
			return "", usageError{fmt.Errorf("--token-file: %w", err)}
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", usageError{fmt.Errorf("--token-file %s is empty", tokenFile)}
	case serviceAccount != "":
		tr, err := kube.CoreV1().ServiceAccounts(key.Namespace).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To(int64(tokenTTL / time.Second))},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("make a token for ServiceAccount %s/%s with audience %s: %w", key.Namespace, serviceAccount, audience, err)
		}
		return tr.Status.Token, nil
	case strings.TrimSpace(os.Getenv(tokenEnv)) != "":
		return strings.TrimSpace(os.Getenv(tokenEnv)), nil
	}
	return "", usageError{fmt.Errorf("the read API of %s needs a token made for it: --service-account SA (of namespace %s), or --token-file F / $%s with a token from kubectl -n %s create token SA --audience %s",
		key, key.Namespace, tokenEnv, key.Namespace, audience)}
}

func (a *feedAPI) Location() *time.Location { return a.loc }
func (a *feedAPI) Close()                   {}

func (a *feedAPI) Dead(ctx context.Context, f store.DeadFilter) ([]store.DeadMessage, error) {
	q := url.Values{}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	} else {
		q.Set("limit", strconv.Itoa(readapi.MaxListLimit))
	}
	if f.Reason != "" {
		q.Set("reason", f.Reason)
	}
	if f.Replayed {
		q.Set("replayed", "true")
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	var out struct{ Items []store.DeadMessage }
	err := a.call(ctx, "GET", "dead", q, nil, &out)
	a.capped(f.Limit, len(out.Items), "messages")
	return out.Items, err
}

// capped says on standard error when "all" (limit 0) was asked and the read
// API answered its maximum: the list may go on, and nothing is cut
// silently.
func (a *feedAPI) capped(asked, got int, what string) {
	if asked <= 0 && got >= readapi.MaxListLimit && a.warn != nil {
		_, _ = fmt.Fprintf(a.warn, "flightfeed: the first %d %s only: the read API lists at most %d at once; narrow the list (--since, --reason) or use --config F on the database for all\n",
			got, what, readapi.MaxListLimit)
	}
}

func (a *feedAPI) Parked(ctx context.Context, limit int) ([]store.ParkedEvent, error) {
	asked := limit
	if limit <= 0 {
		limit = readapi.MaxListLimit
	}
	var out struct{ Items []store.ParkedEvent }
	err := a.call(ctx, "GET", "parked", url.Values{"limit": {strconv.Itoa(limit)}}, nil, &out)
	a.capped(asked, len(out.Items), "parked events")
	return out.Items, err
}

func (a *feedAPI) Redeliver(ctx context.Context, ids []int64) ([]int64, error) {
	var out readapi.RedeliverResult
	return out.Redelivered, a.call(ctx, "POST", "parked/redeliver", nil, readapi.RedeliverRequest{IDs: ids, All: len(ids) == 0}, &out)
}

func (a *feedAPI) RequestReplay(ctx context.Context, id int64, policy string) (store.ReplayRequest, error) {
	var out store.ReplayRequest
	return out, a.call(ctx, "POST", "replays", nil, readapi.ReplayRequestBody{ID: id, Policy: policy}, &out)
}

func (a *feedAPI) Rerequest(ctx context.Context, day string) (int64, error) {
	var out readapi.RerequestResult
	return out.Released, a.call(ctx, "POST", "rerequests", nil, readapi.RerequestBody{Day: day}, &out)
}

func (a *feedAPI) Replay(ctx context.Context, id int64) (store.ReplayRequest, error) {
	var out store.ReplayRequest
	return out, a.call(ctx, "GET", "replays/"+strconv.FormatInt(id, 10), nil, nil, &out)
}

// call sends one request through the service proxy and decodes the answer
// into out.
func (a *feedAPI) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	service := feednames.Pump(a.key.Name)
	req := a.rest.Verb(method).Namespace(a.key.Namespace).Resource("services").
		Name("https:"+service+":"+feednames.APIPort).SubResource("proxy").
		Suffix("api", "v1", "feeds", a.key.Namespace, a.key.Name, path).
		SetHeader(readapi.TokenHeader, "Bearer "+a.token)
	for k, vs := range q {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		req = req.SetHeader("Content-Type", "application/json").Body(b)
	}
	res := req.Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		return a.explain(service, raw, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("read API of %s: %s %s: the answer is not the JSON expected: %w", a.key, method, path, err)
	}
	return nil
}

// proxyName is the service proxy's name of the feed's read API: what the
// URL names and what a Role's resourceNames must list for services/proxy.
func proxyName(service string) string {
	return "https:" + service + ":" + feednames.APIPort
}

// explain names who refused a request: the pump pod (its JSON error body)
// or the API server (a Status: no right on services/proxy, no pump pod
// ready, …).
func (a *feedAPI) explain(service string, raw []byte, err error) error {
	var pumpErr struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &pumpErr) == nil && pumpErr.Error != "" {
		code := 0
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			code = int(se.Status().Code)
		}
		return &httpStatusError{code: code, err: fmt.Errorf("read API of %s (%d): %s", a.key, code, pumpErr.Error)}
	}
	// client-go's error for a proxied request says only "unknown": the
	// API server's own refusal is a Status in the body, a failure to reach
	// the pod its text ("error trying to reach service: …").
	var status metav1.Status
	switch body := strings.TrimSpace(string(raw)); {
	case json.Unmarshal(raw, &status) == nil && status.Kind == "Status" && status.Message != "":
		err = errors.New(status.Message)
	case body != "" && !json.Valid(raw):
		err = fmt.Errorf("%w: %s", err, oneLine(body, 300))
	}
	return fmt.Errorf("reach the read API of %s through the API server's service proxy (services/proxy %s/%s): %w",
		a.key, a.key.Namespace, proxyName(service), err)
}

// Flight is one flight's canonical JSON document (GET flights/{flid}).
func (a *feedAPI) Flight(ctx context.Context, flid string) (json.RawMessage, error) {
	var doc json.RawMessage
	return doc, a.call(ctx, "GET", "flights/"+flid, nil, nil, &doc)
}

// EachFlight calls fn with every flight's canonical JSON document (of day,
// when given), FLIDs ascending, paging through GET flights with its cursor:
// each page is one consistent read, the whole is not.
func (a *feedAPI) EachFlight(ctx context.Context, day string, pageSize int, fn func(json.RawMessage) error) error {
	q := url.Values{"limit": {strconv.Itoa(pageSize)}}
	if day != "" {
		q.Set("day", day)
	}
	for {
		var page struct {
			Items  []json.RawMessage `json:"items"`
			Cursor string            `json:"cursor"`
		}
		if err := a.call(ctx, "GET", "flights", q, nil, &page); err != nil {
			return err
		}
		for _, doc := range page.Items {
			if err := fn(doc); err != nil {
				return err
			}
		}
		if page.Cursor == "" {
			return nil
		}
		q.Set("cursor", page.Cursor)
	}
}

// httpStatusError is the read API's own refusal, with its HTTP status, so
// a caller can tell "no such flight" (404) from a failure.
type httpStatusError struct {
	code int
	err  error
}

func (e *httpStatusError) Error() string { return e.err.Error() }
func (e *httpStatusError) Unwrap() error { return e.err }
