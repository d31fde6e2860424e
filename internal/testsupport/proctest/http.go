package proctest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// httpClient is HTTPGet's default client.
var httpClient = &http.Client{Timeout: time.Second}

// HTTPGet returns the status and body of url (with c, or a client with a
// one-second timeout when nil); 0 and the error when the server does not
// answer (a killed or frozen process).
func HTTPGet(c *http.Client, url string) (int, string) {
	if c == nil {
		c = httpClient
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// FeedMetric is the value of the series name of the feed namespace/feed
// in a Prometheus text exposition; ok is false when there is none.
func FeedMetric(body, name, namespace, feed string) (value float64, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, `feed="`+feed+`"`) ||
			!strings.Contains(line, `feed_namespace="`+namespace+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		return v, err == nil
	}
	return 0, false
}
