package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
)

// maxID bounds the ids and names taken from a URL.
const maxID = 512

// checkID rejects an id no source could know: empty, too long, or holding
// control characters.
func checkID(what, id string) error {
	if id == "" || len(id) > maxID || strings.ContainsFunc(id, unicode.IsControl) {
		return fmt.Errorf("%w: %s %q", ErrInvalid, what, id)
	}
	return nil
}

// runs returns the runs list, newest first.
func (s *Server) runs(ctx context.Context) ([]RunSummary, error) {
	if s.src.Runs == nil {
		return nil, fmt.Errorf("%w: no run source", ErrUnavailable)
	}
	rs, err := s.src.Runs.Runs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RunSummary, 0, len(rs))
	for i := len(rs) - 1; i >= 0; i-- {
		out = append(out, rs[i])
	}
	return out, nil
}

// run returns a run with its graph laid out.
func (s *Server) run(ctx context.Context, id string) (*Run, error) {
	if err := checkID("run", id); err != nil {
		return nil, err
	}
	if s.src.Runs == nil {
		return nil, fmt.Errorf("%w: no run source", ErrUnavailable)
	}
	r, err := s.src.Runs.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Tasks == nil {
		r.Tasks = []Task{}
	}
	if r.Edges == nil {
		r.Edges = []Edge{}
	}
	r.Graph = layoutGraph(r)
	return r, nil
}

func (s *Server) task(ctx context.Context, run, task string) (*TaskDetail, error) {
	if err := checkID("run", run); err != nil {
		return nil, err
	}
	if err := checkID("task", task); err != nil {
		return nil, err
	}
	if s.src.Runs == nil {
		return nil, fmt.Errorf("%w: no run source", ErrUnavailable)
	}
	return s.src.Runs.Task(ctx, run, task)
}

func (s *Server) board(ctx context.Context) (*BoardSnapshot, error) {
	if s.src.Board == nil {
		return nil, fmt.Errorf("%w: no board", ErrUnavailable)
	}
	b, err := s.src.Board.Board(ctx)
	if err != nil {
		return nil, err
	}
	if b.Workers == nil {
		b.Workers = []Worker{}
	}
	if b.Claims == nil {
		b.Claims = []Claim{}
	}
	if b.Tasks == nil {
		b.Tasks = []BoardTask{}
	}
	if b.Conflicts == nil {
		b.Conflicts = []Conflict{}
	}
	if b.Hints == nil {
		b.Hints = []Hint{}
	}
	return &b, nil
}

func (s *Server) escrow(ctx context.Context) ([]EscrowRequest, error) {
	if s.src.Escrow == nil {
		return nil, fmt.Errorf("%w: no escrow queue", ErrUnavailable)
	}
	es, err := s.src.Escrow.Escrow(ctx)
	if es == nil && err == nil {
		es = []EscrowRequest{}
	}
	return es, err
}

func (s *Server) reviews(ctx context.Context) ([]Escalated, error) {
	if s.src.Reviews == nil {
		return nil, fmt.Errorf("%w: no review queue", ErrUnavailable)
	}
	rs, err := s.src.Reviews.Escalated(ctx)
	if rs == nil && err == nil {
		rs = []Escalated{}
	}
	return rs, err
}

func (s *Server) getReviews(w http.ResponseWriter, r *http.Request) {
	rs, err := s.reviews(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rs)
}

func (s *Server) getRuns(w http.ResponseWriter, r *http.Request) {
	rs, err := s.runs(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rs)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r.Context(), r.PathValue("run"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.task(r.Context(), r.PathValue("run"), r.PathValue("task"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) getGateway(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.gatewayView())
}

func (s *Server) getBoard(w http.ResponseWriter, r *http.Request) {
	b, err := s.board(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) getEscrow(w http.ResponseWriter, r *http.Request) {
	es, err := s.escrow(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, es)
}

func (s *Server) getPlots(w http.ResponseWriter, r *http.Request) {
	if s.src.Plots == nil {
		writeJSON(w, http.StatusOK, []Plot{})
		return
	}
	ps, err := s.src.Plots.Plots(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ps == nil {
		ps = []Plot{}
	}
	writeJSON(w, http.StatusOK, ps)
}

func (s *Server) getPlot(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := checkID("plot", name); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.src.Plots == nil {
		s.fail(w, r, fmt.Errorf("%w: plot %s", ErrNotFound, name))
		return
	}
	b, ctype, err := s.src.Plots.Plot(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", ctype)
	// An SVG opened on its own must not run scripts it may hold.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}

// actionBody is the JSON body of an action; both fields are optional.
type actionBody struct {
	Note   string `json:"note"`
	Reason string `json:"reason"`
}

// maxActionBody bounds an action's body.
const maxActionBody = 16 << 10

func readAction(r *http.Request) (actionBody, error) {
	var a actionBody
	b, err := io.ReadAll(io.LimitReader(r.Body, maxActionBody+1))
	if err != nil {
		return a, fmt.Errorf("%w: reading the body: %v", ErrInvalid, err)
	}
	if len(b) > maxActionBody {
		return a, fmt.Errorf("%w: body over %d bytes", ErrInvalid, maxActionBody)
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &a); err != nil {
			return a, fmt.Errorf("%w: body: %v", ErrInvalid, err)
		}
	}
	return a, nil
}

// act runs an action and answers {"ok": true} or the error; open streams
// are told at once.
func (s *Server) act(w http.ResponseWriter, r *http.Request, f func(ctx context.Context, a actionBody) error) {
	a, err := readAction(r)
	if err == nil {
		err = f(r.Context(), a)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.Notify()
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) postCancel(w http.ResponseWriter, r *http.Request) {
	run, task := r.PathValue("run"), r.PathValue("task")
	s.act(w, r, func(ctx context.Context, a actionBody) error {
		if err := checkID("run", run); err != nil {
			return err
		}
		if task != "" {
			if err := checkID("task", task); err != nil {
				return err
			}
		}
		if s.src.Cancel == nil {
			return fmt.Errorf("%w: cancelling is not connected", ErrUnavailable)
		}
		reason := a.Reason
		if reason == "" {
			reason = "cancelled from the dashboard by " + s.reviewer
		}
		s.log.Info("cancel", "run_id", run, "task_id", task, "reason", reason)
		return s.src.Cancel.Cancel(ctx, run, task, reason)
	})
}

func (s *Server) postHint(w http.ResponseWriter, r *http.Request) {
	typ, verdict := r.PathValue("type"), r.PathValue("verdict")
	s.act(w, r, func(ctx context.Context, a actionBody) error {
		if err := checkID("hint type", typ); err != nil {
			return err
		}
		if s.src.Hints == nil {
			return fmt.Errorf("%w: hint review is not connected", ErrUnavailable)
		}
		s.log.Info("hint review", "type", typ, "verdict", verdict, "reviewer", s.reviewer)
		switch verdict {
		case "approve":
			return s.src.Hints.ApproveHint(ctx, typ, s.reviewer, a.Note)
		case "reject":
			return s.src.Hints.RejectHint(ctx, typ, s.reviewer, a.Note)
		}
		return fmt.Errorf("%w: verdict %q: want approve or reject", ErrNotFound, verdict)
	})
}

func (s *Server) postEscrow(w http.ResponseWriter, r *http.Request) {
	id, verdict := r.PathValue("id"), r.PathValue("verdict")
	s.act(w, r, func(ctx context.Context, a actionBody) error {
		if err := checkID("escrow request", id); err != nil {
			return err
		}
		if s.src.Decide == nil {
			return fmt.Errorf("%w: escrow decisions are not connected", ErrUnavailable)
		}
		s.log.Info("escrow decision", "id", id, "verdict", verdict, "reviewer", s.reviewer)
		switch verdict {
		case "approve":
			return s.src.Decide.ApproveEscrow(ctx, id, s.reviewer, a.Note)
		case "deny":
			return s.src.Decide.DenyEscrow(ctx, id, s.reviewer, a.Note)
		}
		return fmt.Errorf("%w: verdict %q: want approve or deny", ErrNotFound, verdict)
	})
}

// errorJSON is what a stream topic carries when its read failed.
func errorJSON(err error) []byte {
	code := "error"
	switch {
	case errors.Is(err, ErrUnavailable):
		code = "unavailable"
	case errors.Is(err, ErrNotFound):
		code = "not_found"
	}
	b, _ := json.Marshal(map[string]string{"error": readable(err), "code": code})
	return b
}
