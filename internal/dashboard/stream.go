package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/apiary-dev/apiary/internal/sse"
)

// Stream topics, the SSE event names.
const (
	TopicRuns    = "runs"
	TopicRun     = "run"
	TopicTask    = "task"
	TopicGateway = "gateway"
	TopicBoard   = "board"
	TopicEscrow  = "escrow"
	TopicReviews = "reviews"
	// TopicEnd is sent once when the dashboard stops (the run that served
	// it ended, say) after the last state: the page then keeps showing it
	// instead of reconnecting.
	TopicEnd = "end"
)

// heartbeat is how long a quiet stream waits before a comment line, so
// proxies and the browser keep it open.
const heartbeat = 15 * time.Second

// serveStream sends each topic's JSON whenever it changed: every topic at
// once, then on Notify or every interval. ?run=ID adds the run topic and
// ?task=NAME (with run) the task topic.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	run, task := q.Get("run"), q.Get("task")
	if run != "" {
		if err := checkID("run", run); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if task != "" {
		if err := checkID("task", task); err != nil || run == "" {
			s.fail(w, r, fmt.Errorf("%w: task %q needs a run", ErrInvalid, task))
			return
		}
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := sse.NewWriter(w)
	if err := sw.Retry(2000); err != nil {
		return
	}
	ctx := r.Context()
	last := map[string][]byte{}
	// push sends the topics that changed; false when the client is gone.
	push := func(ctx context.Context) (wrote, ok bool) {
		for _, topic := range []string{TopicRuns, TopicRun, TopicTask, TopicGateway, TopicBoard, TopicEscrow, TopicReviews} {
			b, carried := s.topic(ctx, topic, run, task)
			if !carried || bytes.Equal(b, last[topic]) || ctx.Err() != nil {
				continue
			}
			last[topic] = b
			if err := sw.Event(topic, b); err != nil {
				return wrote, false
			}
			wrote = true
		}
		return wrote, true
	}
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	quiet := time.Duration(0)
	for {
		changed := s.changes()
		wrote, ok := push(ctx)
		if !ok {
			return
		}
		if !wrote && quiet >= heartbeat {
			if err := sw.Comment("ping"); err != nil {
				return
			}
			wrote = true
		}
		if wrote {
			quiet = 0
			if err := rc.Flush(); err != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			// The server is stopping (a run that --dash served ended, say):
			// send the last state, so the page shows how things ended.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalPush)
			defer cancel()
			if _, ok := push(fctx); ok && sw.Event(TopicEnd, []byte(`{"reason":"stopped"}`)) == nil {
				_ = rc.Flush()
			}
			return
		case <-changed:
		case <-tick.C:
			quiet += s.interval
		}
	}
}

// finalPush bounds the last update a stream sends when the server stops.
const finalPush = 2 * time.Second

// topic returns a topic's current JSON (an error object when its read
// failed); ok is false for a topic the stream does not carry.
func (s *Server) topic(ctx context.Context, topic, run, task string) ([]byte, bool) {
	var v any
	var err error
	switch topic {
	case TopicRuns:
		v, err = s.runs(ctx)
	case TopicRun:
		if run == "" {
			return nil, false
		}
		v, err = s.run(ctx, run)
	case TopicTask:
		if task == "" {
			return nil, false
		}
		v, err = s.task(ctx, run, task)
	case TopicGateway:
		v = s.gatewayView()
	case TopicBoard:
		v, err = s.board(ctx)
	case TopicEscrow:
		v, err = s.escrow(ctx)
	case TopicReviews:
		v, err = s.reviews(ctx)
	default:
		return nil, false
	}
	if err != nil {
		return errorJSON(err), true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errorJSON(err), true
	}
	return b, true
}
