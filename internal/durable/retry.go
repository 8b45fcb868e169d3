package durable

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
)

// attemptsFile persists retry budgets across restarts.
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

// loadBudgetLocked reads attempts.json once; w.attempts must be held.
func (w *Workspace) loadBudgetLocked() {
	if w.budget != nil {
		return
	}
	w.budget = map[string]*attempt{}
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return
	}
	defer st.Close()
	data, err := st.ReadFile(attemptsFile)
	if err != nil {
		return
	}
	var m map[string]*attempt
	if json.Unmarshal(data, &m) == nil && m != nil {
		w.budget = m
	}
}

// saveBudgetLocked writes attempts.json atomically (not journaled).
func (w *Workspace) saveBudgetLocked() error {
	data, err := marshalIndent(w.budget)
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
	w.attempts.Lock()
	defer w.attempts.Unlock()
	w.loadBudgetLocked()
	a := w.budget[key]
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
func (w *Workspace) budgetFail(key string, budget int, e *Error) int {
	w.attempts.Lock()
	defer w.attempts.Unlock()
	w.loadBudgetLocked()
	a := w.budget[key]
	if a == nil {
		a = &attempt{}
		w.budget[key] = a
	}
	left := max(0, budget-a.Failures)
	a.Failures++
	a.Reason = e.Reason
	a.Patterns = e.Patterns
	if err := w.saveBudgetLocked(); err != nil {
		w.log.Warn("durable: cannot persist retry budget", "err", err)
	}
	return left
}

// budgetReset forgets the refusals of (tool, path) after a success.
func (w *Workspace) budgetReset(tool, p string) {
	w.attempts.Lock()
	defer w.attempts.Unlock()
	w.loadBudgetLocked()
	prefix := tool + "\x00" + p + "\x00"
	changed := false
	for k := range w.budget {
		if strings.HasPrefix(k, prefix) {
			delete(w.budget, k)
			changed = true
		}
	}
	if changed {
		if err := w.saveBudgetLocked(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.log.Warn("durable: cannot persist retry budget", "err", err)
		}
	}
}
