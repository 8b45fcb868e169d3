package telemetry

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Log keys the handler adds, stable lower_snake like every apiary log key.
const (
	KeyRun   = "run_id"
	KeyTask  = "task_id"
	KeyAgent = "agent"
	KeyTrace = "trace_id"
	KeySpan  = "span_id"
)

// IDs name what a log record is about. Empty fields are left out.
type IDs struct {
	Run   string
	Task  string
	Agent string
}

type idsKey struct{}

// WithIDs returns ctx carrying ids; non-empty fields override those ctx
// already carries, so a task's context can add its task to its run's.
func WithIDs(ctx context.Context, ids IDs) context.Context {
	cur := IDsFrom(ctx)
	if ids.Run != "" {
		cur.Run = ids.Run
	}
	if ids.Task != "" {
		cur.Task = ids.Task
	}
	if ids.Agent != "" {
		cur.Agent = ids.Agent
	}
	return context.WithValue(ctx, idsKey{}, cur)
}

// IDsFrom returns the ids ctx carries (zero if none).
func IDsFrom(ctx context.Context) IDs {
	ids, _ := ctx.Value(idsKey{}).(IDs)
	return ids
}

// LogOptions configure NewLogger. The zero value logs text at Info.
type LogOptions struct {
	Level slog.Leveler // nil means slog.LevelInfo
	JSON  bool         // JSON lines instead of key=value text
}

// NewLogger returns a logger writing to w whose records carry, besides
// their own attributes, the ids of their context (see WithIDs) and the
// trace and span ids of the span in it: log with the ...Context methods
// (InfoContext) to get them.
func NewLogger(w io.Writer, o LogOptions) *slog.Logger {
	ho := &slog.HandlerOptions{Level: o.Level}
	var h slog.Handler
	if o.JSON {
		h = slog.NewJSONHandler(w, ho)
	} else {
		h = slog.NewTextHandler(w, ho)
	}
	return slog.New(NewHandler(h))
}

// NewHandler wraps h so that every record carries its context's ids and
// trace position. Attributes the caller set explicitly are not repeated.
func NewHandler(h slog.Handler) slog.Handler { return &idHandler{h: h} }

type idHandler struct {
	h slog.Handler
	// own are the keys added with WithAttrs at the top level: the ids the
	// logger was built with win over the context's.
	own map[string]bool
	// grouped: WithGroup was called, so the context's ids land inside
	// the group, like every attribute added from then on.
	grouped bool
}

func (h *idHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *idHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx == nil {
		return h.h.Handle(ctx, r)
	}
	have := map[string]bool{}
	r.Attrs(func(a slog.Attr) bool {
		have[a.Key] = true
		return true
	})
	add := func(k, v string) {
		if v != "" && !have[k] && !h.own[k] {
			r.AddAttrs(slog.String(k, v))
		}
	}
	ids := IDsFrom(ctx)
	add(KeyRun, ids.Run)
	add(KeyTask, ids.Task)
	add(KeyAgent, ids.Agent)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		add(KeyTrace, sc.TraceID().String())
		add(KeySpan, sc.SpanID().String())
	}
	return h.h.Handle(ctx, r)
}

func (h *idHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &idHandler{h: h.h.WithAttrs(as), own: h.own, grouped: h.grouped}
	if !h.grouped {
		n.own = make(map[string]bool, len(h.own)+len(as))
		for k := range h.own {
			n.own[k] = true
		}
		for _, a := range as {
			n.own[a.Key] = true
		}
	}
	return n
}

func (h *idHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &idHandler{h: h.h.WithGroup(name), own: h.own, grouped: true}
}
