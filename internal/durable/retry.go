package durable

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
)

// attemptsFile persists retry budgets across restarts and processes.
const attemptsFile = "attempts.json"

// attempt counts identical refusals of one (tool, path, content) triple.
type attempt struct {
	Failures int      `json:"failures"`
	Reason   Reason   `json:"reason"`
	Patterns []string `json:"patterns"`
}

// budgetKey identifies "the same write again".
func budgetKey(tool, p, contentSHA string) string {
	return tool + "\x00" + p + "\x00" + contentSHA
}

// loadBudget reads attempts.json. It is read afresh on every use: other
// server processes on the root count refusals too.
func (w *Workspace) loadBudget() map[string]*attempt {
	m := map[string]*attempt{}
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return m
	}
	defer st.Close()
	data, err := w.readState(st, attemptsFile)
	if err != nil {
		return m
	}
	var got map[string]*attempt
	if json.Unmarshal(data, &got) == nil && got != nil {
		m = got
	}
	return m
}

// saveBudget writes attempts.json atomically (not journaled); the attempts
// lock is held.
func (w *Workspace) saveBudget(m map[string]*attempt) error {
	data, err := marshalIndent(m)
	if err != nil {
		return err
	}
	st, err := w.stateRoot(true)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = w.writeAtomic(context.Background(), st, attemptsFile, data, writeOpts{disp: w.statePath(attemptsFile)})
	return err
}

// budgetExhausted returns a quota_exceeded envelope when this exact write
// has already used up its retry budget.
func (w *Workspace) budgetExhausted(key string, budget int, p string) *Error {
	a := w.loadBudget()[key]
	if a == nil || a.Failures <= budget {
		return nil
	}
	e := newErr(KindQuotaExceeded, a.Reason, ActionAskUser, map[string]any{
		"path": p, "reason": "retry_budget_exhausted", "attempts": a.Failures, "retry_budget_default": budget,
	})
	e.Patterns = append([]string{}, a.Patterns...)
	return e
}

// budgetFail records one more identical refusal and returns the retries
// left: the budget on the first refusal, then one less each time, then 0.
func (w *Workspace) budgetFail(ctx context.Context, key string, budget int, e *Error) int {
	h, err := w.acquire(ctx, lockAttempts, true, true)
	if err != nil {
		w.log.Warn("durable: cannot lock retry budgets", "err", err)
	}
	defer h.unlock()
	m := w.loadBudget()
	a := m[key]
	if a == nil {
		a = &attempt{}
		m[key] = a
	}
	left := max(0, budget-a.Failures)
	a.Failures++
	a.Reason = e.Reason
	a.Patterns = e.Patterns
	if err := w.saveBudget(m); err != nil {
		w.log.Warn("durable: cannot persist retry budget", "err", err)
	}
	return left
}

// budgetReset forgets the refusals of (tool, path) after a success.
func (w *Workspace) budgetReset(ctx context.Context, tool, p string) {
	prefix := tool + "\x00" + p + "\x00"
	has := func(m map[string]*attempt) bool {
		for k := range m {
			if strings.HasPrefix(k, prefix) {
				return true
			}
		}
		return false
	}
	if !has(w.loadBudget()) {
		return
	}
	h, err := w.acquire(context.WithoutCancel(ctx), lockAttempts, true, true)
	if err != nil {
		w.log.Warn("durable: cannot lock retry budgets", "err", err)
	}
	defer h.unlock()
	m := w.loadBudget()
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			delete(m, k)
		}
	}
	if err := w.saveBudget(m); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.log.Warn("durable: cannot persist retry budget", "err", err)
	}
}
