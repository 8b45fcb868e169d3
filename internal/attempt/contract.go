package attempt

import (
	"context"
	"errors"
	"sync"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envelope"
)

// Roles of an attempt, as reported in TaskRef and in reports' shares.
const (
	RoleWorker     = "worker"
	RoleReconciler = "reconciler"
	RolePlanner    = "planner"
	RoleAnalyser   = "analyser"
	RoleReviewer   = "reviewer"
)

// Trailers apiary adds to its commits besides the git package's.
const (
	TrailerAttempt     = "Apiary-Attempt"
	TrailerIntegration = "Apiary-Integration"
)

// TaskRef names one attempt of one task for the services a run uses.
type TaskRef struct {
	Run     string
	Task    string // the task's name in its plan ("" for the planner)
	TaskID  string // UUIDv7
	Attempt int
	Role    string // one of the Role constants
	// Capability is the attempt's capability token (text), "" when the
	// run mints none (the planner). A gateway binds it to the key it
	// grants and verifies it on every request.
	Capability string
}

// Access is how one attempt's agent reaches the models.
type Access struct {
	BaseURL string // "" leaves the agent's default
	APIKey  string
	KeyID   string // for Usage; "" when usage cannot be looked up
}

// Usage is what the model service accounted for one key. Known is false
// when the service cannot tell (no gateway): the caller then falls back on
// the agent CLI's own report.
type Usage struct {
	Known        bool
	InputTokens  int64
	OutputTokens int64
	USD          float64
}

// ModelAccess gives each attempt its own way to the models, bounded by the
// task's budget, and reports what it spent. The gateway implements it with
// one virtual key per attempt. Implementations must be safe for concurrent
// use.
type ModelAccess interface {
	Grant(ctx context.Context, ref TaskRef, budget envelope.Budget) (Access, error)
	Usage(ctx context.Context, keyID string) (Usage, error)
}

// AccessRevoker is a ModelAccess that can end one attempt's access at once:
// its key is refused from then on and its requests in flight are aborted,
// upstream too. Run revokes an attempt's access the moment the attempt's
// context ends (before its agent's grace period runs out) and when its
// agent has exited, so no cancelled attempt keeps spending.
type AccessRevoker interface {
	Revoke(ctx context.Context, keyID string) error
}

// EndAccess arranges for m to revoke keyID when ctx is cancelled, and
// returns the function that revokes it at once (call it when the agent
// has exited). Without an AccessRevoker or a key it does nothing.
func EndAccess(ctx context.Context, m ModelAccess, keyID string) func() {
	rv, ok := m.(AccessRevoker)
	if !ok || keyID == "" {
		return func() {}
	}
	var once sync.Once
	revoke := func() {
		once.Do(func() { _ = rv.Revoke(context.WithoutCancel(ctx), keyID) })
	}
	stop := context.AfterFunc(ctx, revoke)
	return func() {
		stop()
		revoke()
	}
}

// WriteSurface gives an agent apiary's MCP write surface rooted at its
// worktree and confined to its write scope: it returns the MCP server to
// start, which each agent CLI is given in its own configuration format. g
// carries the attempt's capability (the durable server verifies it on
// every tool call) and the run's control socket; its zero value gives
// none. Safe for concurrent use.
type WriteSurface interface {
	MCPServer(worktree string, writeScope []string, g Grant) (agent.MCPServer, error)
}

// Grant is what an agent's MCP server is handed besides the worktree and
// write scope.
type Grant struct {
	Capability  string   // the attempt's token: checked on every tool call
	Revocations string   // the run's revocation file
	Control     string   // the run's control socket (apiary.spawn)
	EscrowTools []string // tools that need a human's approval
}

// How a candidate was integrated: the values of a receipt's integrated
// field and of the TrailerIntegration trailer.
const (
	FastForward = "fast-forward"
	Merge       = "merge"
	Reconciled  = "reconciled"
)

// ErrUnknownAgent: a task names an agent profile that cannot be resolved.
var ErrUnknownAgent = errors.New("unknown agent profile")
