package runs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// A live run serves its control socket: agents spawn children, renew
// leases and ask for escrowed operations through it, and operators cancel
// tasks of a run started by another process. The protocol is JSON over
// HTTP on a Unix socket, RunDir/control.sock (or, when that path is too
// long for a socket, a path in the temporary directory named by
// RunDir/control.addr). Agents find it in $APIARY_CONTROL.

// Errors a control request can fail with; *ControlError wraps one.
var (
	// ErrPermission: the capability does not allow the request (a depth
	// limit, a tool, a revoked or expired token, authority wider than the
	// parent's).
	ErrPermission = errors.New("permission denied")
	// ErrEscrow: the operation needs a human's approval first
	// (escrow_elevation_required).
	ErrEscrow = errors.New("escrow elevation required")
	// ErrNotLive: no process is executing the run.
	ErrNotLive = errors.New("run is not live")
	// ErrUnknownTask: no such task in the run.
	ErrUnknownTask = errors.New("unknown task")
	// ErrFinished: the task (or run) to cancel has already ended.
	ErrFinished = errors.New("already finished")
)

// Error kinds on the wire.
const (
	KindPermission = "permission_denied"
	KindEscrow     = "escrow_elevation_required"
	KindInvalid    = "invalid_request"
	KindUnknown    = "unknown_task"
	KindBudget     = "budget_exhausted"
	KindCancelled  = "cancelled"
	KindFinished   = "already_finished"
	KindInternal   = "internal_error"
)

// ControlError is a control request's typed failure.
type ControlError struct {
	Kind    string         `json:"error"`
	Message string         `json:"message"`
	Context map[string]any `json:"context,omitempty"`
}

func (e *ControlError) Error() string { return e.Kind + ": " + e.Message }

// Is matches the sentinel of the kind.
func (e *ControlError) Is(target error) bool {
	switch e.Kind {
	case KindPermission:
		return target == ErrPermission
	case KindEscrow:
		return target == ErrEscrow
	case KindUnknown:
		return target == ErrUnknownTask
	case KindFinished:
		return target == ErrFinished
	case KindInvalid, KindBudget:
		return target == ErrChild
	}
	return false
}

// SpawnRequest asks for a child task. Envelope is the child's envelope
// (the schema's; task_id may be any valid UUIDv7, apiary assigns its own).
type SpawnRequest struct {
	Capability string          `json:"capability"`
	Envelope   json.RawMessage `json:"envelope"`
	// Wait returns only when the child is done, with its receipt.
	Wait bool `json:"wait,omitempty"`
}

// SpawnResult is the accepted child.
type SpawnResult struct {
	Task    string          `json:"task"`
	TaskID  string          `json:"task_id"`
	Depth   int             `json:"depth"`
	Budget  json.RawMessage `json:"budget"`
	Receipt json.RawMessage `json:"receipt,omitempty"` // with Wait
}

// CancelRequest asks to cancel a task's subtree ("" cancels the run).
type CancelRequest struct {
	Operator string `json:"operator"` // an OperatorToken
	Task     string `json:"task,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// WaitS bounds how long the answer waits for the subtree to be gone;
	// 0 means 60 s.
	WaitS float64 `json:"wait_s,omitempty"`
}

// CancelResult says what the cancellation reached and how it ended.
type CancelResult struct {
	// Cancelled are the tasks it reached that now have cancelled receipts
	// and no process left.
	Cancelled []string `json:"cancelled"`
	// Finished are tasks it reached that ended otherwise first (their work
	// was integrated before the cancel came): name → status.
	Finished map[string]string `json:"finished,omitempty"`
	// Pending are tasks still going when the wait ran out (no receipt yet,
	// or processes left): name → what is left.
	Pending map[string]string `json:"pending,omitempty"`
	// AckMs is how long the runtime took from receiving the request to
	// having every task it reached done and every process of theirs gone.
	AckMs float64 `json:"ack_ms"`
}

// EscrowCheck asks whether an operation may proceed.
type EscrowCheck struct {
	Capability string `json:"capability"`
	Kind       string `json:"kind"` // "command" or "tool"
	Operation  string `json:"operation"`
}

// EscrowVerdict answers an EscrowCheck that passed.
type EscrowVerdict struct {
	Allowed bool   `json:"allowed"`
	Request string `json:"request,omitempty"` // the approved request it used
}

// ControlPath returns the control socket of run id in the repository at
// root.
func ControlPath(root, id string) string {
	dir := rundir.Path(root, id)
	if b, err := os.ReadFile(filepath.Join(dir, "control.addr")); err == nil {
		return strings.TrimSpace(string(b))
	}
	return filepath.Join(dir, "control.sock")
}

// maxSocketPath is the longest Unix socket path every platform accepts.
const maxSocketPath = 100

// listenControl opens the run's control socket; the caller closes it.
func listenControl(root, id string) (net.Listener, string, error) {
	dir := rundir.Path(root, id)
	p := filepath.Join(dir, "control.sock")
	addr := filepath.Join(dir, "control.addr")
	os.Remove(addr)
	if len(p) > maxSocketPath {
		sum := sha256.Sum256([]byte(p))
		p = filepath.Join(os.TempDir(), "apiary-"+hex.EncodeToString(sum[:8])+".sock")
		if err := rundir.WriteFile(addr, []byte(p+"\n")); err != nil {
			return nil, "", err
		}
	}
	os.Remove(p) // left by a killed process: we hold the run's lock
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, "", fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, "", err
	}
	return ln, p, nil
}

// Control is a client of a live run's control socket. Safe for concurrent
// use.
type Control struct {
	path string
	hc   *http.Client
}

// DialControl returns a client for the socket at path; nothing is
// connected until a request is made.
func DialControl(path string) *Control {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}
	return &Control{path: path, hc: &http.Client{Transport: tr}}
}

// Spawn asks the run for a child task.
func (c *Control) Spawn(ctx context.Context, req SpawnRequest) (*SpawnResult, error) {
	var out SpawnResult
	return &out, c.call(ctx, "/v1/spawn", req, &out)
}

// Cancel cancels a task's subtree (or the whole run).
func (c *Control) Cancel(ctx context.Context, req CancelRequest) (*CancelResult, error) {
	var out CancelResult
	return &out, c.call(ctx, "/v1/cancel", req, &out)
}

// Heartbeat renews the lease of the attempt that holds capability.
func (c *Control) Heartbeat(ctx context.Context, capability string) error {
	return c.call(ctx, "/v1/heartbeat", map[string]string{"capability": capability}, &struct{}{})
}

// Escrow asks whether an operation may proceed: nil when it is not
// escrowed or was approved; a *ControlError matching ErrEscrow (with the
// request id in its Context) while it waits for a human.
func (c *Control) Escrow(ctx context.Context, req EscrowCheck) (*EscrowVerdict, error) {
	var out EscrowVerdict
	return &out, c.call(ctx, "/v1/escrow", req, &out)
}

func (c *Control) call(ctx context.Context, route string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://apiary"+route, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hr)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && ctx.Err() == nil {
			return fmt.Errorf("%w: %s: %v", ErrNotLive, c.path, err)
		}
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		ce := &ControlError{}
		if json.Unmarshal(b, ce) != nil || ce.Kind == "" {
			return fmt.Errorf("control %s: HTTP %d: %s", route, resp.StatusCode, attempt.Clip(string(b), 200))
		}
		return ce
	}
	return json.Unmarshal(b, out)
}

// controlServer serves a runner's control socket.
type controlServer struct {
	r    *runner
	srv  *http.Server
	path string
	done chan struct{}
}

// serveControl starts the control socket; stop closes it and waits.
func (r *runner) serveControl() (*controlServer, error) {
	ln, p, err := listenControl(r.st.Root(), r.rec.RunID)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	cs := &controlServer{r: r, path: p, done: make(chan struct{})}
	mux.HandleFunc("POST /v1/spawn", cs.spawn)
	mux.HandleFunc("POST /v1/cancel", cs.cancel)
	mux.HandleFunc("POST /v1/heartbeat", cs.heartbeat)
	mux.HandleFunc("POST /v1/escrow", cs.escrow)
	cs.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return r.runCtx }}
	go func() {
		defer close(cs.done)
		_ = cs.srv.Serve(ln)
	}()
	return cs, nil
}

// stop closes the socket and waits for the handlers in flight.
func (cs *controlServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cs.srv.Shutdown(ctx); err != nil {
		cs.srv.Close()
	}
	<-cs.done
	os.Remove(cs.path)
}

func decodeBody(w http.ResponseWriter, req *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(req.Body, maxChildBytes+4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, &ControlError{Kind: KindInvalid, Message: "request body: " + err.Error()})
		return false
	}
	return true
}

func writeJSON200(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	var ce *ControlError
	if !errors.As(err, &ce) {
		ce = &ControlError{Kind: KindInternal, Message: err.Error()}
	}
	status := http.StatusInternalServerError
	switch ce.Kind {
	case KindPermission, KindEscrow:
		status = http.StatusForbidden
	case KindInvalid, KindBudget:
		status = http.StatusBadRequest
	case KindUnknown:
		status = http.StatusNotFound
	case KindCancelled, KindFinished:
		status = http.StatusConflict
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ce)
}

func (cs *controlServer) spawn(w http.ResponseWriter, req *http.Request) {
	var in SpawnRequest
	if !decodeBody(w, req, &in) {
		return
	}
	out, err := cs.r.spawn(req.Context(), in)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON200(w, out)
}

func (cs *controlServer) cancel(w http.ResponseWriter, req *http.Request) {
	var in CancelRequest
	if !decodeBody(w, req, &in) {
		return
	}
	out, err := cs.r.cancelRequest(req.Context(), in)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON200(w, out)
}

func (cs *controlServer) heartbeat(w http.ResponseWriter, req *http.Request) {
	var in struct {
		Capability string `json:"capability"`
	}
	if !decodeBody(w, req, &in) {
		return
	}
	if err := cs.r.agentHeartbeat(in.Capability); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON200(w, struct{}{})
}

func (cs *controlServer) escrow(w http.ResponseWriter, req *http.Request) {
	var in EscrowCheck
	if !decodeBody(w, req, &in) {
		return
	}
	out, err := cs.r.escrowCheck(req.Context(), in)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON200(w, out)
}

// ErrorKind returns the error's kind (for typed tool results).
func (e *ControlError) ErrorKind() string { return e.Kind }

// ErrorContext returns the error's context.
func (e *ControlError) ErrorContext() map[string]any { return e.Context }

// AgentSpawner spawns children for the agent whose capability it holds,
// through a live run's control socket: it is the apiary.spawn tool's
// Spawner (`apiary mcp` in an agent's worktree).
type AgentSpawner struct {
	Control    *Control
	Capability string
}

// Spawn asks the run for a child described by env; the answer is the
// run's SpawnResult as JSON.
func (s AgentSpawner) Spawn(ctx context.Context, env json.RawMessage, wait bool) (json.RawMessage, error) {
	res, err := s.Control.Spawn(ctx, SpawnRequest{Capability: s.Capability, Envelope: env, Wait: wait})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
