package llmfake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Load is a closed-loop HTTP load generator: Concurrency workers each send
// one request at a time over keep-alive connections until Duration is over.
// It measures a model server (llmfake itself, or the gateway in front of
// it).
type Load struct {
	// URL is the full request URL, e.g. http://127.0.0.1:7411/v1/messages.
	URL string
	// Body is the JSON request body; Header is added to every request.
	Body   []byte
	Header http.Header
	// Concurrency is the number of workers (default 1); Duration how long
	// they send (default 1s).
	Concurrency int
	Duration    time.Duration
	// Client sends the requests; nil means a keep-alive client with one
	// idle connection per worker.
	Client *http.Client
	// Progress, if set, is called about every Every (default 1s) from the
	// goroutine running Run.
	Progress func(LoadProgress)
	Every    time.Duration
}

// LoadProgress is a running count.
type LoadProgress struct {
	Elapsed  time.Duration
	Requests int64
	Errors   int64
}

// LoadResult summarises a run. Latency is per request, from sending it to
// reading the whole body (for a stream: its last event).
type LoadResult struct {
	Requests int64         `json:"requests"`
	Errors   int64         `json:"errors"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	RPS      float64       `json:"req_per_s"`
	P50      time.Duration `json:"p50_ns"`
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
	// FirstError describes the first failed request, if any.
	FirstError string `json:"first_error,omitempty"`
}

// Run sends requests until the duration is over or ctx ends. Only a
// configuration mistake is an error; failed requests are counted.
func (l *Load) Run(ctx context.Context) (LoadResult, error) {
	if l.URL == "" {
		return LoadResult{}, errors.New("llmfake: load: no URL")
	}
	conc := max(l.Concurrency, 1)
	dur := l.Duration
	if dur <= 0 {
		dur = time.Second
	}
	client := l.Client
	if client == nil {
		tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc,
			IdleConnTimeout: 30 * time.Second, DisableCompression: true}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()

	var reqs, errs atomic.Int64
	var firstErr sync.Once
	var firstMsg string
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Go(func() {
			buf := make([]byte, 32<<10)
			mine := make([]time.Duration, 0, 1024)
			for ctx.Err() == nil {
				t0 := time.Now()
				err := l.once(ctx, client, buf)
				if ctx.Err() != nil {
					break // cut off by the end of the run: not counted
				}
				reqs.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.Do(func() { firstMsg = err.Error() })
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			lat[w] = mine
		})
	}
	every := l.Every
	if every <= 0 {
		every = time.Second
	}
	if l.Progress != nil {
		tick := time.NewTicker(every)
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case <-tick.C:
				l.Progress(LoadProgress{Elapsed: time.Since(start), Requests: reqs.Load(), Errors: errs.Load()})
			}
		}
		tick.Stop()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, m := range lat {
		all = append(all, m...)
	}
	slices.Sort(all)
	res := LoadResult{Requests: reqs.Load(), Errors: errs.Load(), Elapsed: elapsed, FirstError: firstMsg}
	res.RPS = float64(res.Requests) / elapsed.Seconds()
	if n := len(all); n > 0 {
		res.P50, res.P99, res.Max = all[n/2], all[min(n*99/100, n-1)], all[n-1]
	}
	return res, nil
}

func (l *Load) once(ctx context.Context, c *http.Client, buf []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL, bytes.NewReader(l.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range l.Header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	for {
		_, err := resp.Body.Read(buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
