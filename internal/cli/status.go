package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/serving"
)

func newStatusCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [NAME] [-A] [-w] [-o wide|json|yaml]",
		Short: "Show a FlightFeed's health from the Kubernetes API server alone",
		Long: `status reads one FlightFeed (NAME, or NS/NAME) or every FlightFeed of the
namespace (-n NS, else the kubeconfig context's; -A: of every namespace)
from the API server and prints its leader and the age of its Lease, its
conditions, its pump pods (ready/updated/desired) and database schema
version, the pump (head, lag, queue, rate, what blocks the head), the
outbox, Kafka, the newest DEAD messages (from the feed's Events) and the
per-day snapshot ledger (its FlightFeedDays). It needs no DSN: only read
access to FlightFeeds, FlightFeedDays, Leases and Events. -o wide keeps
messages whole; -o json and -o yaml print the report. -w prints it again
each time a FlightFeed shown changes, until interrupted.`,
		Example: examples(m,
			"status",
			"status -A",
			"status pek -n airport-pek -w",
			"status pek -n airport-pek -o yaml --dead 50"),
		Args: cobra.MaximumNArgs(1),
	}
	f := cmd.Flags()
	cf := kubeFlags(cmd, m)
	cmd.ValidArgsFunction = completeFeedNames(cf)
	feedFlag := new(string)
	if !m.plugin() {
		cmd.Use = "status [--kubeconfig K] [NAME | --feed NS/NAME | -A] [-w] [-o text|wide|json|yaml]"
		cmd.Long += `
The kubectl plugin (kubectl-flightfeed, a binary of its own) has it as
"kubectl flightfeed status".`
		feedFlag = f.String("feed", "", "the FlightFeed, NS/NAME or NAME (the same as the positional NAME)")
	}
	textDefault := ""
	if !m.plugin() {
		textDefault = "text"
	}
	output := outputFlag(cmd, textDefault, "output format: wide, json or yaml (default: text)", "text", outWide, outJSON, outYAML)
	deadN := f.Int("dead", 10, "how many of the newest DEAD messages to list")
	leaseNS := f.String("lease-namespace", "", "for a feed still run by a release that ran the pumps inside the operator: that operator's namespace, where it kept the feed's Lease (default: the feed's own namespace, else found by listing Leases)")
	allNamespaces := f.BoolP("all-namespaces", "A", false, "every FlightFeed of every namespace")
	watch := f.BoolP("watch", "w", false, "print again each time a FlightFeed shown changes, until interrupted")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		format, err := output()
		if err != nil {
			return err
		}
		if *deadN < 0 {
			return usageError{fmt.Errorf("--dead %d: must not be negative", *deadN)}
		}
		name, err := feedArgument(args, *feedFlag)
		if err != nil {
			return err
		}
		if name != "" && *allNamespaces {
			return usageError{fmt.Errorf("name a feed (%s) or give -A, not both", name)}
		}
		cfg, ns, err := cf.restConfig()
		if err != nil {
			return err
		}
		c, err := statusClient(cfg)
		if err != nil {
			return err
		}
		// What is shown: one feed, or the feeds of listNS ("": every
		// namespace).
		var key types.NamespacedName
		listNS := ns
		if name != "" {
			if key, err = parseFeedKey(name, ns); err != nil {
				return usageError{err}
			}
			listNS = key.Namespace
		} else if *allNamespaces {
			listNS = ""
		}
		show := func(ctx context.Context) error {
			keys := []types.NamespacedName{key}
			if name == "" {
				if keys, err = listFeeds(ctx, c, listNS); err != nil {
					return err
				}
			}
			now := time.Now()
			reports := make([]statusReport, 0, len(keys))
			for _, key := range keys {
				in, err := gatherStatus(ctx, c, key, *leaseNS)
				if err != nil {
					return err
				}
				reports = append(reports, buildStatusReport(in, *deadN, now))
			}
			switch format {
			case outJSON:
				return writeStatusJSON(cmd.OutOrStdout(), reports, name != "")
			case outYAML:
				return writeStatusYAML(cmd.OutOrStdout(), reports, name != "")
			}
			if len(reports) == 0 {
				where := "in namespace " + listNS
				if listNS == "" {
					where = "in any namespace"
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "No FlightFeeds found "+where+".")
				return err
			}
			width := maxStatusText
			if format == outWide {
				width = 1 << 20
			}
			return writeStatusTextMode(cmd.OutOrStdout(), m, reports, now, width)
		}
		if !*watch {
			return show(cmd.Context())
		}
		separator := "\n"
		if format == outYAML {
			separator = "---\n"
		}
		return watchStatus(cmd.Context(), cfg, listNS, key.Name, func(ctx context.Context, again bool) error {
			if again && format != outJSON {
				if _, err := io.WriteString(cmd.OutOrStdout(), separator); err != nil {
					return fmt.Errorf("write output: %w", err)
				}
			}
			return show(ctx)
		})
	}
	return cmd
}

// statusSettle is how long status --watch waits after a change for more
// before it prints: the leader writes several fields in a burst.
var statusSettle = 300 * time.Millisecond

// watchStatus calls show, then again after each change of the FlightFeeds
// of ns ("": every namespace; only the one named name when given), until
// ctx ends.
func watchStatus(ctx context.Context, cfg *rest.Config, ns, name string, show func(ctx context.Context, again bool) error) error {
	scheme, err := serving.Scheme()
	if err != nil {
		return fmt.Errorf("build the client's scheme: %w", err)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connect to the API server %s: %w", cfg.Host, err)
	}
	opts := []client.ListOption{client.InNamespace(ns)}
	if name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": name})
	}
	// look lists the FlightFeeds: the resource version to watch from, and
	// each feed's own resource version, which changes when it does.
	look := func() (rv, versions string, err error) {
		var list v1alpha1.FlightFeedList
		if err := wc.List(ctx, &list, opts...); err != nil {
			return "", "", fmt.Errorf("list FlightFeeds: %w", err)
		}
		var b strings.Builder
		for _, ff := range list.Items {
			fmt.Fprintf(&b, "%s/%s@%s ", ff.Namespace, ff.Name, ff.ResourceVersion)
		}
		return list.ResourceVersion, b.String(), nil
	}
	printed, shown := false, ""
	showIfChanged := func() (string, error) {
		rv, versions, err := look()
		if err != nil || (printed && versions == shown) {
			return rv, err
		}
		if err := show(ctx, printed); err != nil {
			return rv, err
		}
		printed, shown = true, versions
		return rv, nil
	}
	for {
		rv, err := showIfChanged()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		w, err := wc.Watch(ctx, &v1alpha1.FlightFeedList{},
			append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch FlightFeeds: %w", err)
		}
		err = followChanges(ctx, w, statusSettle, func() error {
			_, err := showIfChanged()
			return err
		})
		w.Stop()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		// The watch ended (the API server ends them after a while, or the
		// resource version expired): list and watch again.
	}
}

// followChanges calls changed after each burst of events of w (events
// closer together than settle are one), until w ends or ctx does.
func followChanges(ctx context.Context, w watch.Interface, settle time.Duration, changed func() error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return nil
			}
		}
		timer := time.NewTimer(settle)
	drain:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case ev, ok := <-w.ResultChan():
				if !ok || ev.Type == watch.Error {
					timer.Stop()
					return changed()
				}
			case <-timer.C:
				break drain
			}
		}
		if err := changed(); err != nil {
			return err
		}
	}
}

// parseFeedKey reads NS/NAME or NAME (in namespace ns).
func parseFeedKey(arg, ns string) (types.NamespacedName, error) {
	parts := strings.Split(arg, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return types.NamespacedName{Namespace: ns, Name: parts[0]}, nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return types.NamespacedName{Namespace: parts[0], Name: parts[1]}, nil
	}
	return types.NamespacedName{}, fmt.Errorf("--feed %q: must be NAMESPACE/NAME or NAME", arg)
}

// statusClient reads the kinds status needs, uncached: one command, one
// look.
func statusClient(cfg *rest.Config) (client.Client, error) {
	scheme, err := serving.Scheme()
	if err != nil {
		return nil, fmt.Errorf("build the client's scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to the API server %s: %w", cfg.Host, err)
	}
	return c, nil
}

// listFeeds lists the FlightFeeds of namespace ns ("": every namespace).
func listFeeds(ctx context.Context, c client.Reader, ns string) ([]types.NamespacedName, error) {
	var list v1alpha1.FlightFeedList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list FlightFeeds: %w", err)
	}
	keys := make([]types.NamespacedName, 0, len(list.Items))
	for _, ff := range list.Items {
		keys = append(keys, types.NamespacedName{Namespace: ff.Namespace, Name: ff.Name})
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return keys, nil
}

// statusInput is everything the API server knows about one feed.
type statusInput struct {
	Feed   v1alpha1.FlightFeed
	Lease  *coordinationv1.Lease // nil: no replica ever led
	Days   []v1alpha1.FlightFeedDay
	Events []corev1.Event
}

// gatherStatus reads the feed, its Lease, its FlightFeedDays and its
// Events.
func gatherStatus(ctx context.Context, c client.Reader, key types.NamespacedName, leaseNS string) (statusInput, error) {
	var in statusInput
	if err := c.Get(ctx, key, &in.Feed); err != nil {
		if apierrors.IsNotFound(err) {
			return in, usageError{fmt.Errorf("FlightFeed %s not found", key)}
		}
		return in, fmt.Errorf("read FlightFeed %s: %w", key, err)
	}
	var err error
	if in.Lease, err = findLease(ctx, c, key, leaseNS); err != nil {
		return in, err
	}
	var days v1alpha1.FlightFeedDayList
	if err := c.List(ctx, &days, client.InNamespace(key.Namespace), client.MatchingLabels{v1alpha1.LabelFeed: key.Name}); err != nil {
		return in, fmt.Errorf("list the FlightFeedDays of %s: %w", key, err)
	}
	for _, d := range days.Items {
		if metav1.IsControlledBy(&d, &in.Feed) {
			in.Days = append(in.Days, d)
		}
	}
	var events corev1.EventList
	sel := fields.SelectorFromSet(fields.Set{"involvedObject.kind": "FlightFeed", "involvedObject.name": key.Name})
	if err := c.List(ctx, &events, client.InNamespace(key.Namespace), client.MatchingFieldsSelector{Selector: sel}); err != nil {
		return in, fmt.Errorf("list the Events of %s: %w", key, err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.UID == in.Feed.UID {
			in.Events = append(in.Events, e)
		}
	}
	return in, nil
}

// findLease reads the feed's Lease: in the feed's own namespace, where
// its pump pods elect on it; else, for a feed still run by a release that
// ran the pumps inside the operator, in leaseNS when given, else the one
// Lease of that name in any namespace that names the feed (a user who may
// not list Leases everywhere gives --lease-namespace). Nil: none.
func findLease(ctx context.Context, c client.Reader, key types.NamespacedName, leaseNS string) (*coordinationv1.Lease, error) {
	name := pumppod.FeedLeaseName(key)
	var lease coordinationv1.Lease
	switch err := c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: name}, &lease); {
	case err == nil:
		return &lease, nil
	case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		return nil, fmt.Errorf("read the Lease of %s: %w", key, err)
	}
	if leaseNS != "" {
		switch err := c.Get(ctx, types.NamespacedName{Namespace: leaseNS, Name: name}, &lease); {
		case err == nil:
			return &lease, nil
		case apierrors.IsNotFound(err):
			return nil, nil
		default:
			return nil, fmt.Errorf("read the Lease of %s: %w", key, err)
		}
	}
	var list coordinationv1.LeaseList
	err := c.List(ctx, &list, client.MatchingLabels{pumppod.LabelLeaseFeed: "true"},
		client.MatchingFields{"metadata.name": name})
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("find the Lease of %s: %w", key, err)
	}
	for i := range list.Items {
		if list.Items[i].Annotations[pumppod.AnnotationLeaseFeed] == key.String() {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// statusReport is what status prints for one feed (-o json prints it as
// is). The ledger's entries are the objects `flightfeed ledger` prints,
// plus when the day's snapshot committed.
type statusReport struct {
	Feed               string                   `json:"feed"`
	Generation         int64                    `json:"generation"`
	ObservedGeneration int64                    `json:"observedGeneration"`
	Conditions         []metav1.Condition       `json:"conditions"`
	Leader             leaderReport             `json:"leader"`
	Pump               *v1alpha1.PumpStatus     `json:"pump,omitempty"`
	Outbox             *v1alpha1.OutboxStatus   `json:"outbox,omitempty"`
	Backfill           *v1alpha1.BackfillStatus `json:"backfill,omitempty"`
	Kafka              kafkaReport              `json:"kafka"`
	Dead               []deadReport             `json:"dead"`
	Ledger             []ledgerReport           `json:"ledger"`
	Latest             *v1alpha1.LatestSnapshot `json:"latestSnapshot,omitempty"`
	PumpPods           *v1alpha1.PumpPodsStatus `json:"pumpPods,omitempty"`
	SchemaVersion      int64                    `json:"schemaVersion,omitempty"`
}

// leaderReport is the feed's Lease as the API server holds it.
type leaderReport struct {
	// Holder of the Lease; empty when nobody holds it.
	Holder string `json:"holder,omitempty"`
	// Epoch is the fencing epoch the status reports for the holder.
	Epoch int64 `json:"epoch,omitempty"`
	// Acquired and Renewed are the Lease's times; LeaseAge is now−Renewed.
	Acquired *metav1.MicroTime `json:"acquired,omitempty"`
	Renewed  *metav1.MicroTime `json:"renewed,omitempty"`
	LeaseAge *metav1.Duration  `json:"leaseAge,omitempty"`
	// Duration is how long the Lease is valid without renewal; Expired
	// says it was not renewed within it.
	Duration    *metav1.Duration `json:"duration,omitempty"`
	Expired     bool             `json:"expired"`
	Transitions int32            `json:"transitions"`
}

type kafkaReport struct {
	Brokers     []string `json:"brokers"`
	StateTopic  string   `json:"stateTopic"`
	NoticeTopic string   `json:"noticeTopic"`
	// Reachable is the KafkaReachable condition's status, Reason and
	// Message its reason and message.
	Reachable metav1.ConditionStatus `json:"reachable"`
	Reason    string                 `json:"reason,omitempty"`
	Message   string                 `json:"message,omitempty"`
}

// deadReport is one Event of a DEAD message (or a refused day mismatch).
type deadReport struct {
	Time    metav1.Time `json:"time"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Count   int32       `json:"count"`
}

type ledgerReport struct {
	Day           string       `json:"day"`
	Version       int64        `json:"version"`
	LastMessageID int64        `json:"last_message_id"`
	Flights       int64        `json:"flights"`
	CommittedAt   *metav1.Time `json:"committed_at,omitempty"`
}

// maxStatusText cuts a message in the table (-o json keeps it whole).
const maxStatusText = 200

// deadReasons are the Event reasons of messages the pump refused for good.
var deadReasons = []string{pumppod.ReasonDeadMessage, pumppod.ReasonDayMismatch, pumppod.ReasonMessagePanicked}

// buildStatusReport decides what to show; no I/O.
func buildStatusReport(in statusInput, deadN int, now time.Time) statusReport {
	ff := &in.Feed
	st := ff.Status
	r := statusReport{
		Feed: ff.Namespace + "/" + ff.Name, Generation: ff.Generation, ObservedGeneration: st.ObservedGeneration,
		Conditions: st.Conditions, Pump: st.Pump, Outbox: st.Outbox, Backfill: st.Backfill, Latest: st.LatestSnapshot,
		PumpPods: st.PumpPods, SchemaVersion: st.SchemaVersion,
		Dead: []deadReport{}, Ledger: []ledgerReport{},
	}
	if r.Conditions == nil {
		r.Conditions = []metav1.Condition{}
	}
	if l := in.Lease; l != nil {
		s := l.Spec
		if s.HolderIdentity != nil {
			r.Leader.Holder = *s.HolderIdentity
		}
		r.Leader.Acquired, r.Leader.Renewed = s.AcquireTime, s.RenewTime
		if s.LeaseTransitions != nil {
			r.Leader.Transitions = *s.LeaseTransitions
		}
		if s.LeaseDurationSeconds != nil {
			r.Leader.Duration = &metav1.Duration{Duration: time.Duration(*s.LeaseDurationSeconds) * time.Second}
		}
		if s.RenewTime != nil {
			age := now.Sub(s.RenewTime.Time).Truncate(time.Second)
			r.Leader.LeaseAge = &metav1.Duration{Duration: max(age, 0)}
			r.Leader.Expired = r.Leader.Duration != nil && age > r.Leader.Duration.Duration
		}
	}
	if p := st.Pump; p != nil && p.Holder == r.Leader.Holder {
		r.Leader.Epoch = p.Epoch
	}
	r.Kafka = kafkaReport{Brokers: ff.Spec.Kafka.Brokers, StateTopic: ff.Spec.Kafka.Topics.State, NoticeTopic: ff.Spec.Kafka.Topics.Notice,
		Reachable: metav1.ConditionUnknown}
	if c := meta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionKafkaReachable)); c != nil {
		r.Kafka.Reachable, r.Kafka.Reason, r.Kafka.Message = c.Status, c.Reason, c.Message
	}
	for _, e := range in.Events {
		if slices.Contains(deadReasons, e.Reason) {
			r.Dead = append(r.Dead, deadReport{Time: eventTime(e), Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1)})
		}
	}
	// Newest first, the newest N.
	slices.SortStableFunc(r.Dead, func(a, b deadReport) int { return b.Time.Compare(a.Time.Time) })
	r.Dead = r.Dead[:min(len(r.Dead), deadN)]
	for _, d := range in.Days {
		r.Ledger = append(r.Ledger, ledgerReport{Day: d.Spec.Day, Version: d.Status.Version, LastMessageID: d.Status.LastMessageID,
			Flights: d.Status.Flights, CommittedAt: d.Status.LastCommitAt})
	}
	slices.SortFunc(r.Ledger, func(a, b ledgerReport) int { return cmp.Compare(a.Day, b.Day) })
	return r
}

// eventTime is when an Event (or the last of its series) happened,
// whichever API wrote it.
func eventTime(e corev1.Event) metav1.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return metav1.Time{Time: e.Series.LastObservedTime.Time}
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.CreationTimestamp
}

// writeStatusJSON prints one report as an object when a feed was named,
// else a list of them.
func writeStatusJSON(w io.Writer, reports []statusReport, one bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	var err error
	if one && len(reports) == 1 {
		err = enc.Encode(reports[0])
	} else {
		err = enc.Encode(reports)
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// writeStatusYAML is writeStatusJSON in YAML.
func writeStatusYAML(w io.Writer, reports []statusReport, one bool) error {
	var v any = reports
	if one && len(reports) == 1 {
		v = reports[0]
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// writeStatusText prints the reports for a terminal as the flightfeed
// binary does, one block per feed, messages cut to maxStatusText.
func writeStatusText(w io.Writer, reports []statusReport, now time.Time) error {
	return writeStatusTextMode(w, binaryMode, reports, now, maxStatusText)
}

// writeStatusTextMode is writeStatusText with messages cut to width and
// the commands it suggests written for m's binary.
func writeStatusTextMode(w io.Writer, m mode, reports []statusReport, now time.Time, width int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		writeOneStatus(tw, m, r, now, width)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func writeOneStatus(w io.Writer, m mode, r statusReport, now time.Time, width int) {
	// msg is a message of the feed's, on one line, its command hints
	// (written by the pump as `flightfeed rerequest --day D`) made into
	// command lines for this feed in this binary's form.
	msg := func(s string) string { return commandHints(m, r.Feed, oneLine(s, width)) }
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return duration.HumanDuration(now.Sub(t)) + " ago"
	}
	ready := "Unknown"
	if c := findCondition(r.Conditions, v1alpha1.ConditionReady); c != nil {
		ready = string(c.Status) + " (" + c.Reason + ")"
	}
	fmt.Fprintf(w, "FlightFeed %s\tReady %s\n", r.Feed, ready)
	if r.ObservedGeneration != r.Generation {
		fmt.Fprintf(w, "  the status describes generation %d; the spec is at %d\n", r.ObservedGeneration, r.Generation)
	}
	if p := r.PumpPods; p != nil {
		fmt.Fprintf(w, "Pump pods:\t%s ready, %d updated, %d desired (Deployment %s)", orDash(p.Ready), p.UpdatedReplicas, p.Replicas, p.Deployment)
		if p.Generation != 0 {
			fmt.Fprintf(w, ", rolled out generation %d", p.Generation)
		}
		fmt.Fprintln(w)
		if p.Waiting != "" {
			fmt.Fprintf(w, "\tWAITING: %s\n", msg(p.Waiting))
		}
		for _, a := range p.Adjusted {
			fmt.Fprintf(w, "\tadjusted: %s\n", msg(a))
		}
	} else {
		fmt.Fprintln(w, "Pump pods:\tnot reported by the operator")
	}
	if r.SchemaVersion != 0 {
		fmt.Fprintf(w, "Schema:\tversion %d (the database's, as the leader last found it)\n", r.SchemaVersion)
	} else {
		fmt.Fprintln(w, "Schema:\tnot reported yet")
	}

	l := r.Leader
	if l.Holder == "" {
		fmt.Fprintln(w, "Leader:\tnone")
	} else {
		state := "renewed " + ago(microTime(l.Renewed))
		if l.Expired {
			state = "EXPIRED, last renewed " + ago(microTime(l.Renewed))
		}
		fmt.Fprintf(w, "Leader:\t%s, epoch %d, lease %s (valid %s), leading since %s, %d transitions\n",
			l.Holder, l.Epoch, state, durationText(l.Duration), ago(microTime(l.Acquired)), l.Transitions)
	}

	if p := r.Pump; p != nil && (p.Holder != "" || p.Counts != nil) {
		head := "empty"
		if p.HeadID != 0 {
			head = fmt.Sprintf("row %d", p.HeadID)
		}
		fmt.Fprintf(w, "Pump:\thead %s, lag %s, queue %d, %s msg/s, last processed row %d\n",
			head, durationText(p.Lag), p.QueueDepth, orDash(p.MessagesPerSecond), p.LastProcessedID)
		if p.HeadBlockedSince != nil {
			fmt.Fprintf(w, "\tBLOCKED since %s: %s\n", ago(p.HeadBlockedSince.Time), msg(p.HeadLastError))
		}
		if c := p.Counts; c != nil {
			fmt.Fprintf(w, "\tsucceeded %d, skipped %d, dead %d, failed %d (since the pump started)\n", c.Succeeded, c.Skipped, c.Dead, c.Failed)
		}
		for _, f := range p.FailedRequests {
			fmt.Fprintf(w, "\tREQUEST FAILED for %s (message %d): %s; not asked again until %s\n",
				f.Day, f.MessageID, oneLine(f.Rejection, width), commandHints(m, r.Feed, "`flightfeed rerequest --day "+f.Day+"`"))
		}
	} else {
		fmt.Fprintln(w, "Pump:\tnot running")
	}
	if o := r.Outbox; o != nil {
		fmt.Fprintf(w, "Outbox:\t%d pending, oldest %s\n", o.Pending, duration.HumanDuration(o.OldestAge.Duration))
	}
	if b := r.Backfill; b != nil {
		fmt.Fprintf(w, "Backfill:\t%d results not yet written to the mailbox\n", b.Pending)
	}
	k := r.Kafka
	fmt.Fprintf(w, "Kafka:\t%s → %s, %s; reachable %s", strings.Join(k.Brokers, ","), k.StateTopic, k.NoticeTopic, k.Reachable)
	if k.Reason != "" {
		fmt.Fprintf(w, " (%s)", k.Reason)
	}
	if k.Reachable != metav1.ConditionTrue && k.Message != "" {
		fmt.Fprintf(w, ": %s", msg(k.Message))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "Conditions:")
	fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, c := range r.Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, ago(c.LastTransitionTime.Time), msg(c.Message))
	}

	if len(r.Dead) == 0 {
		fmt.Fprintln(w, "DEAD messages:\tnone in the feed's Events")
	} else {
		fmt.Fprintf(w, "DEAD messages (newest %d, from the feed's Events):\n", len(r.Dead))
		fmt.Fprintln(w, "  WHEN\tREASON\tCOUNT\tMESSAGE")
		for _, d := range r.Dead {
			fmt.Fprintf(w, "  %s\t%s\t%d\t%s\n", ago(d.Time.Time), d.Reason, d.Count, oneLine(d.Message, width))
		}
	}

	if len(r.Ledger) == 0 {
		fmt.Fprintln(w, "Ledger:\tno operation day yet")
		return
	}
	fmt.Fprintln(w, "Ledger:")
	fmt.Fprintln(w, "  DAY\tVERSION\tLAST-MESSAGE\tFLIGHTS\tCOMMITTED")
	for _, d := range r.Ledger {
		committed := "-"
		if d.CommittedAt != nil {
			committed = d.CommittedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "  %s\t%d\t%d\t%d\t%s\n", d.Day, d.Version, d.LastMessageID, d.Flights, committed)
	}
}

func findCondition(cs []metav1.Condition, t v1alpha1.ConditionType) *metav1.Condition {
	return meta.FindStatusCondition(cs, string(t))
}

func durationText(d *metav1.Duration) string {
	if d == nil {
		return "-"
	}
	return d.Duration.String()
}

func microTime(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// feedCommands are the commands that act on one feed, which a hint in a
// feed's status may name.
var feedCommands = []string{"dead", "parked", "replay", "rerequest", "days", "verify", "logs", "history", "export"}

// binaryHint is a command hint as the pump writes it into the status:
// "`flightfeed rerequest --day D`".
var binaryHint = regexp.MustCompile("`flightfeed ([a-z]+)([^`]*)`")

// commandHints rewrites the hints in s into command lines for the feed
// ("NS/NAME") in m's form: "`kubectl flightfeed rerequest NAME -n NS --day
// D`" in the plugin, "`flightfeed rerequest --feed NS/NAME --day D`" in the
// flightfeed binary.
func commandHints(m mode, feed, s string) string {
	ns, name, _ := strings.Cut(feed, "/")
	return binaryHint.ReplaceAllStringFunc(s, func(h string) string {
		sub := binaryHint.FindStringSubmatch(h)
		if !slices.Contains(feedCommands, sub[1]) || strings.Contains(sub[2], "--feed") || strings.Contains(sub[2], "--config") {
			return h
		}
		if m.plugin() {
			return "`kubectl flightfeed " + sub[1] + " " + name + " -n " + ns + sub[2] + "`"
		}
		return "`flightfeed " + sub[1] + " --feed " + feed + sub[2] + "`"
	})
}
