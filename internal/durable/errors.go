package durable

import (
	"errors"
	"fmt"
	"maps"
	"sort"
)

// SchemaVersion is the envelope schema version, the const "1" of Resilient
// Write's spec/errors.schema.json.
const SchemaVersion = "1"

// Kind is the coarse class of a failure: the envelope's "error" field.
type Kind string

// The five error kinds of the envelope schema.
const (
	KindBlocked           Kind = "blocked"
	KindStalePrecondition Kind = "stale_precondition"
	KindWriteCorruption   Kind = "write_corruption"
	KindQuotaExceeded     Kind = "quota_exceeded"
	KindPolicyViolation   Kind = "policy_violation"
)

// Reason is the envelope's "reason_hint": why the sink refused.
type Reason string

// The six reason hints of the envelope schema.
const (
	ReasonContentFilter Reason = "content_filter"
	ReasonSizeLimit     Reason = "size_limit"
	ReasonEncoding      Reason = "encoding"
	ReasonPermission    Reason = "permission"
	ReasonNetwork       Reason = "network"
	ReasonUnknown       Reason = "unknown"
)

// Action is the envelope's "suggested_action".
type Action string

// The six suggested actions of the envelope schema.
const (
	ActionRedact     Action = "redact"
	ActionSplit      Action = "split"
	ActionEscape     Action = "escape"
	ActionAskUser    Action = "ask_user"
	ActionRetryLater Action = "retry_later"
	ActionAbort      Action = "abort"
)

// Kinds, Reasons and Actions list the schema enums in schema order.
var (
	Kinds   = []Kind{KindBlocked, KindStalePrecondition, KindWriteCorruption, KindQuotaExceeded, KindPolicyViolation}
	Reasons = []Reason{ReasonContentFilter, ReasonSizeLimit, ReasonEncoding, ReasonPermission, ReasonNetwork, ReasonUnknown}
	Actions = []Action{ActionRedact, ActionSplit, ActionEscape, ActionAskUser, ActionRetryLater, ActionAbort}
)

// Sentinels, one per kind: errors.Is(err, ErrStalePrecondition) holds for
// every *Error of that kind.
var (
	ErrBlocked           = errors.New("durable: blocked")
	ErrStalePrecondition = errors.New("durable: stale precondition")
	ErrWriteCorruption   = errors.New("durable: write corruption")
	ErrQuotaExceeded     = errors.New("durable: quota exceeded")
	ErrPolicyViolation   = errors.New("durable: policy violation")
)

// Error is a failure the calling model should read: it serialises to the
// Resilient Write error envelope (exactly the keys ok, schema_version, error,
// reason_hint, detected_patterns, suggested_action, retry_budget, context).
// Everything specific to one failure goes into Context.
type Error struct {
	Kind        Kind
	Reason      Reason
	Action      Action
	Patterns    []string
	RetryBudget int
	Context     map[string]any
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("durable: %s/%s", e.Kind, e.Reason)
	if r, ok := e.Context["reason"].(string); ok && r != "" {
		s += ": " + r
	}
	return s
}

// Unwrap returns the kind's sentinel so errors.Is works on kinds.
func (e *Error) Unwrap() error {
	switch e.Kind {
	case KindBlocked:
		return ErrBlocked
	case KindStalePrecondition:
		return ErrStalePrecondition
	case KindWriteCorruption:
		return ErrWriteCorruption
	case KindQuotaExceeded:
		return ErrQuotaExceeded
	case KindPolicyViolation:
		return ErrPolicyViolation
	}
	return nil
}

// Retriable reports whether retrying without operator help can succeed:
// Resilient Write's rule (the network and size_limit hints), and every
// envelope whose suggested action is retry_later — an envelope telling the
// model to retry must not also tell it that retrying is futile.
func (e *Error) Retriable() bool {
	return e.Reason == ReasonNetwork || e.Reason == ReasonSizeLimit || e.Action == ActionRetryLater
}

// Envelope returns the envelope as a map; context gets "retriable" and the
// caller adds "tool". The map is fresh: callers may modify it.
func (e *Error) Envelope() map[string]any {
	ctx := make(map[string]any, len(e.Context)+2)
	maps.Copy(ctx, e.Context)
	if _, ok := ctx["retriable"]; !ok {
		ctx["retriable"] = e.Retriable()
	}
	patterns := append([]string{}, e.Patterns...)
	action := e.Action
	if action == "" {
		action = ActionAbort
	}
	return map[string]any{
		"ok":                false,
		"schema_version":    SchemaVersion,
		"error":             string(e.Kind),
		"reason_hint":       string(e.Reason),
		"detected_patterns": patterns,
		"suggested_action":  string(action),
		"retry_budget":      max(0, e.RetryBudget),
		"context":           ctx,
	}
}

// newErr builds an Error; ctx may be nil. The action defaults to abort, as in
// Resilient Write's direct construction.
func newErr(k Kind, r Reason, a Action, ctx map[string]any) *Error {
	if ctx == nil {
		ctx = map[string]any{}
	}
	if a == "" {
		a = ActionAbort
	}
	return &Error{Kind: k, Reason: r, Action: a, Context: ctx}
}

// policyErr is a policy_violation with reason r and context.reason = why.
func policyErr(r Reason, why string, ctx map[string]any) *Error {
	e := newErr(KindPolicyViolation, r, ActionAbort, ctx)
	if why != "" {
		e.Context["reason"] = why
	}
	return e
}

// encodingErr is the common policy_violation/encoding input error.
func encodingErr(why string, ctx map[string]any) *Error {
	return policyErr(ReasonEncoding, why, ctx)
}

// staleErr is a stale_precondition/unknown with action a.
func staleErr(a Action, why string, ctx map[string]any) *Error {
	e := newErr(KindStalePrecondition, ReasonUnknown, a, ctx)
	if why != "" {
		e.Context["reason"] = why
	}
	return e
}

// corruptErr is a write_corruption with reason r.
func corruptErr(r Reason, why string, ctx map[string]any) *Error {
	e := newErr(KindWriteCorruption, r, ActionAbort, ctx)
	if why != "" {
		e.Context["reason"] = why
	}
	return e
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
