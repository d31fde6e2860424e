package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/store"
)

// reportListLimit is how many of the newest DEAD and parked entries a
// report holds.
const reportListLimit = 200

// managerPodLabels select the operator's (manager's) pods, as the chart
// labels them.
var managerPodLabels = map[string]string{"app.kubernetes.io/name": "flightfeed", feednames.LabelComponent: "manager"}

func newReportCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report NAME [-o FILE] [--tail N] [--service-account SA | --token-file F]",
		Short: "Write a support bundle (tar.gz) of a FlightFeed: its objects, Events, Lease, pods, logs, DEAD and parked lists",
		Long: `report writes a tar.gz support bundle of the feed NAME (or NS/NAME) to FILE
(default: flightfeed-report-NS-NAME-<UTC time>.tar.gz in the current
directory): the FlightFeed and its status report, its FlightFeedDays, the
Events of its namespace about the feed and its pump objects, its Lease, its
pump Deployment and pods, the last --tail lines of each pump pod's log, the
operator's pods' logs (pods labelled app.kubernetes.io/name=flightfeed,
app.kubernetes.io/component=manager, in --operator-namespace or any
namespace), and, given a token for the feed's read API (--service-account,
--token-file or $FLIGHTFEED_TOKEN), the newest DEAD and parked lists.

No Secret is read. Everything collected is redacted before it is written:
credentials in connection strings (scheme://user:password@…, MySQL's
user:password@tcp(…)) and password settings become ***. What could not be
collected (not permitted, not found) is listed in NOTES.txt in the bundle;
read the bundle before you send it on.`,
		Example: examples(m,
			"report pek -n airport-pek",
			"report pek -n airport-pek -o pek-report.tar.gz --service-account ops"),
		Args: cobra.MaximumNArgs(1),
	}
	if m.plugin() {
		cmd.Args = cobra.ExactArgs(1)
	}
	source := addFeedSource(cmd, m, false)
	f := cmd.Flags()
	outFile := f.StringP("output", "o", "", "the bundle's file (default: flightfeed-report-NS-NAME-<UTC time>.tar.gz)")
	tail := f.Int64("tail", 1000, "the last N lines of each pod's log")
	operatorNS := f.String("operator-namespace", "", "the operator's namespace, where its pods' logs are read (default: found in any namespace)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *tail < 0 {
			return usageError{fmt.Errorf("--tail %d: must be 0 or more", *tail)}
		}
		if slices.Contains([]string{outJSON, outYAML, outWide, "name", "text"}, *outFile) {
			return usageError{fmt.Errorf("-o %s: report's -o names the bundle's file (a .tar.gz)", *outFile)}
		}
		cfg, key, err := source.key(args)
		if err != nil {
			return err
		}
		c, err := statusClient(cfg)
		if err != nil {
			return err
		}
		kube, err := newLogSource(cfg)
		if err != nil {
			return err
		}
		var lists func(context.Context) (opsBackend, error)
		if *source.tokenFile != "" || *source.serviceAccount != "" || strings.TrimSpace(os.Getenv(tokenEnv)) != "" {
			lists = func(ctx context.Context) (opsBackend, error) { return source.ops(ctx, cmd, args) }
		}
		now := time.Now().UTC()
		b, err := collectReport(cmd.Context(), c, kube, key, reportOptions{tail: *tail, operatorNS: *operatorNS, lists: lists, now: now})
		if err != nil {
			return err
		}
		path := *outFile
		if path == "" {
			path = fmt.Sprintf("flightfeed-report-%s-%s-%s.tar.gz", key.Namespace, key.Name, now.Format("20060102T150405Z"))
		}
		if err := b.write(path, now); err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d files, %d notes (NOTES.txt)\n", path, len(b.files), len(b.notes))
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return nil
	}
	return cmd
}

type reportOptions struct {
	tail       int64
	operatorNS string
	// lists reaches the feed's read API for the DEAD and parked lists;
	// nil: no token was given.
	lists func(context.Context) (opsBackend, error)
	now   time.Time
}

// bundle is a report's files, redacted as they are added, and its notes.
type bundle struct {
	dir   string
	files []bundleFile
	notes []string
}

type bundleFile struct {
	name string
	data []byte
}

func (b *bundle) add(name string, data []byte) {
	b.files = append(b.files, bundleFile{name: name, data: []byte(redactText(string(data)))})
}

func (b *bundle) addYAML(name string, v any) {
	out, err := yaml.Marshal(v)
	if err != nil {
		b.note("%s: %v", name, err)
		return
	}
	b.add(name, out)
}

func (b *bundle) note(format string, args ...any) {
	b.notes = append(b.notes, redactText(fmt.Sprintf(format, args...)))
}

// collectReport gathers the bundle of the feed key. Only a feed that
// cannot be read fails it; what else cannot be read becomes a note.
func collectReport(ctx context.Context, c client.Reader, kube kubernetes.Interface, key types.NamespacedName, o reportOptions) (*bundle, error) {
	b := &bundle{dir: fmt.Sprintf("flightfeed-report-%s-%s/", key.Namespace, key.Name)}
	in, err := gatherStatus(ctx, c, key, "")
	if err != nil {
		return nil, err
	}
	ff := in.Feed.DeepCopy()
	ff.APIVersion, ff.Kind = v1alpha1.GroupVersion.String(), "FlightFeed"
	ff.ManagedFields = nil
	b.addYAML("flightfeed.yaml", ff)
	b.addYAML("status.yaml", buildStatusReport(in, 50, o.now))
	days := v1alpha1.FlightFeedDayList{}
	for _, d := range in.Days {
		d.APIVersion, d.Kind, d.ManagedFields = v1alpha1.GroupVersion.String(), "FlightFeedDay", nil
		days.Items = append(days.Items, d)
	}
	b.addYAML("flightfeeddays.yaml", days)
	if in.Lease != nil {
		l := in.Lease.DeepCopy()
		l.APIVersion, l.Kind, l.ManagedFields = "coordination.k8s.io/v1", "Lease", nil
		b.addYAML("lease.yaml", l)
	} else {
		b.note("lease.yaml: the feed has no Lease (no pump pod ever led)")
	}
	b.addYAML("events.yaml", relatedEvents(ctx, c, b, key))

	var dep appsv1.Deployment
	if err := c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: feednames.Pump(key.Name)}, &dep); err != nil {
		b.note("deployment.yaml: Deployment %s/%s: %v", key.Namespace, feednames.Pump(key.Name), err)
	} else {
		dep.APIVersion, dep.Kind, dep.ManagedFields = "apps/v1", "Deployment", nil
		b.addYAML("deployment.yaml", &dep)
	}
	pods, err := allPumpPods(ctx, c, key)
	if err != nil {
		b.note("pods: %v", err)
	}
	logOpts := corev1.PodLogOptions{Container: pumpContainer, TailLines: ptr.To(o.tail)}
	for _, name := range pods {
		var pod corev1.Pod
		if err := c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: name}, &pod); err != nil {
			b.note("pods/%s.yaml: %v", name, err)
			continue
		}
		pod.APIVersion, pod.Kind, pod.ManagedFields = "v1", "Pod", nil
		b.addYAML("pods/"+name+".yaml", &pod)
		b.addLog(ctx, kube, "logs/"+name+".log", key.Namespace, name, logOpts)
	}

	var managers corev1.PodList
	err = c.List(ctx, &managers, client.InNamespace(o.operatorNS), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(managerPodLabels)})
	switch {
	case err != nil:
		b.note("operator logs: not collected: list the operator's pods (%s) in %s: %v", labels.SelectorFromSet(managerPodLabels), orAll(o.operatorNS), err)
	case len(managers.Items) == 0:
		b.note("operator logs: no operator pod (%s) found in %s; give --operator-namespace", labels.SelectorFromSet(managerPodLabels), orAll(o.operatorNS))
	}
	for _, p := range managers.Items {
		b.addLog(ctx, kube, "operator/"+p.Namespace+"_"+p.Name+".log", p.Namespace, p.Name, corev1.PodLogOptions{TailLines: ptr.To(o.tail)})
	}

	if o.lists == nil {
		b.note("dead.json, parked.json: not collected: the read API needs a token (--service-account SA, --token-file F or $%s)", tokenEnv)
	} else {
		b.addLists(ctx, o.lists)
	}
	b.add("NOTES.txt", []byte(notesText(b.notes, key, o.now)))
	return b, nil
}

func orAll(ns string) string {
	if ns == "" {
		return "any namespace"
	}
	return "namespace " + ns
}

// relatedEvents are the Events of the feed's namespace about the feed, its
// FlightFeedDays, its Lease and its pump objects (Deployment, ReplicaSets,
// pods, Service, …: their names start with the pump's), oldest first.
func relatedEvents(ctx context.Context, c client.Reader, b *bundle, key types.NamespacedName) corev1.EventList {
	var all, out corev1.EventList
	out.APIVersion, out.Kind = "v1", "List"
	if err := c.List(ctx, &all, client.InNamespace(key.Namespace)); err != nil {
		b.note("events.yaml: list the Events of namespace %s: %v", key.Namespace, err)
		return out
	}
	pump, lease := feednames.Pump(key.Name), feednames.Lease(key)
	for _, e := range all.Items {
		o := e.InvolvedObject
		if (o.Kind == "FlightFeed" && o.Name == key.Name) || (o.Kind == "FlightFeedDay" && strings.HasPrefix(o.Name, key.Name+"-")) ||
			(o.Kind == "Lease" && o.Name == lease) || strings.HasPrefix(o.Name, pump) {
			e.APIVersion, e.Kind, e.ManagedFields = "v1", "Event", nil
			out.Items = append(out.Items, e)
		}
	}
	slices.SortStableFunc(out.Items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b).Time) })
	return out
}

// addLog adds the log of one pod (a note when it cannot be read).
func (b *bundle) addLog(ctx context.Context, kube kubernetes.Interface, name, ns, pod string, opts corev1.PodLogOptions) {
	var buf bytes.Buffer
	if err := streamPodLogs(ctx, kube, ns, []string{pod}, opts, false, &buf); err != nil {
		b.note("%s: %v", name, err)
		if buf.Len() == 0 {
			return
		}
	}
	b.add(name, buf.Bytes())
}

// addLists adds the newest DEAD and parked lists from the read API.
func (b *bundle) addLists(ctx context.Context, open func(context.Context) (opsBackend, error)) {
	api, err := open(ctx)
	if err != nil {
		b.note("dead.json, parked.json: not collected: %v", err)
		return
	}
	defer api.Close()
	dead, err := api.Dead(ctx, store.DeadFilter{Limit: reportListLimit})
	if err != nil {
		b.note("dead.json: not collected: %v", err)
	} else {
		b.addJSON("dead.json", dead)
	}
	parked, err := api.Parked(ctx, reportListLimit)
	if err != nil {
		b.note("parked.json: not collected: %v", err)
	} else {
		b.addJSON("parked.json", parked)
	}
}

func (b *bundle) addJSON(name string, v any) {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b.note("%s: %v", name, err)
		return
	}
	b.add(name, append(out, '\n'))
}

func notesText(notes []string, key types.NamespacedName, now time.Time) string {
	var s strings.Builder
	fmt.Fprintf(&s, "Support bundle of FlightFeed %s, %s.\n", key, now.Format(time.RFC3339))
	s.WriteString("No Secret is included; connection strings and passwords in what was collected are redacted (***).\n")
	if len(notes) == 0 {
		s.WriteString("Everything was collected.\n")
	}
	for _, n := range notes {
		s.WriteString("- " + n + "\n")
	}
	return s.String()
}

// write writes the bundle as a tar.gz to path, readable by its owner only.
func (b *bundle) write(path string, now time.Time) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: the user names the bundle's file
	if err != nil {
		return usageError{fmt.Errorf("-o: %w", err)}
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write %s: %w", path, cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, file := range b.files {
		h := &tar.Header{Name: b.dir + file.name, Mode: 0o600, Size: int64(len(file.data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if _, err := tw.Write(file.data); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

var (
	// uriWithUserinfo is a connection URI with credentials:
	// "postgres://app:s3cret@db:5432/ff".
	uriWithUserinfo = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>@/]*:[^\s"'<>]*@[^\s"'<>]*`)
	// mysqlDSN is a Go MySQL driver DSN with a password:
	// "app:s3cret@tcp(mysql:3306)/mbx".
	mysqlDSN = regexp.MustCompile(`[^\s"'=:/(]+:[^\s"']*@(?:tcp|tcp6|unix|udp)\([^)]*\)[^\s"']*`)
	// passwordText is a password setting in text, a query or JSON:
	// password=s3cret, password: 's3 cret', "password":"s3cret".
	passwordText = regexp.MustCompile(`(?i)((?:ssl|sasl_)?pass(?:word|wd)?"?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&,;"'}]+)`)
)

// redactText hides the credentials a text may quote: every connection
// URI or MySQL DSN with a password is shown as config.RedactDSN shows it
// (***@host…), and every password setting as password=***.
func redactText(s string) string {
	s = uriWithUserinfo.ReplaceAllStringFunc(s, config.RedactDSN)
	s = mysqlDSN.ReplaceAllStringFunc(s, config.RedactDSN)
	return passwordText.ReplaceAllStringFunc(s, func(m string) string {
		sub := passwordText.FindStringSubmatch(m)
		if q := sub[2][0]; q == '"' || q == '\'' {
			return sub[1] + string(q) + "***" + string(q)
		}
		return sub[1] + "***"
	})
}
