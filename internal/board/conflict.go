package board

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Conflict is a record of an integration conflict between tasks. ID, when
// empty, is derived from Type, Tasks and Files, so recording the same conflict
// twice keeps one record.
type Conflict struct {
	ID         string   `json:"id"`
	Type       string   `json:"type"`
	Tasks      []string `json:"tasks"`
	Workers    []string `json:"workers,omitempty"`
	Files      []string `json:"files,omitempty"`
	Resolution string   `json:"resolution,omitempty"`
	Revision   int64    `json:"-"`
}

// HintState is a resolution hint's review state.
type HintState string

// Review states. A hint starts pending; a reviewer approves or rejects it
// once. Only approved hints are handed to later workers.
const (
	HintPending  HintState = "pending"
	HintApproved HintState = "approved"
	HintRejected HintState = "rejected"
)

// Hint is the reviewed resolution for a conflict type, created from the first
// conflict of that type. Revision is the record's ModRevision.
type Hint struct {
	Type       string    `json:"type"`
	Resolution string    `json:"resolution"`
	Conflict   string    `json:"conflict"`
	State      HintState `json:"state"`
	Reviewer   string    `json:"reviewer,omitempty"`
	Note       string    `json:"note,omitempty"`
	Revision   int64     `json:"-"`
}

func conflictKey(id string) string { return PrefixConflicts + seg(id) }
func hintKey(typ string) string    { return PrefixHints + seg(typ) }

// conflictID derives a stable ID from what identifies a conflict.
func conflictID(c Conflict) string {
	tasks, files := slices.Sorted(slices.Values(c.Tasks)), slices.Sorted(slices.Values(c.Files))
	h := sha256.Sum256([]byte(c.Type + "\x00" + strings.Join(tasks, "\x01") + "\x00" + strings.Join(files, "\x01")))
	return hex.EncodeToString(h[:8])
}

// RecordConflict stores c and reports whether it was the first conflict of
// its type, in which case a pending hint carrying c.Resolution entered the
// review queue in the same transaction. Recording a conflict whose ID exists
// returns the stored record and false.
func (s *Store) RecordConflict(ctx context.Context, c Conflict) (Conflict, bool, error) {
	if c.Type == "" || len(c.Tasks) == 0 {
		return Conflict{}, false, fmt.Errorf("conflict: empty type or tasks: %w", ErrInvalid)
	}
	if c.ID == "" {
		c.ID = conflictID(c)
	}
	val, err := json.Marshal(c)
	if err != nil {
		return Conflict{}, false, err
	}
	hint, err := json.Marshal(Hint{Type: c.Type, Resolution: c.Resolution, Conflict: c.ID, State: HintPending})
	if err != nil {
		return Conflict{}, false, err
	}
	ck, hk := conflictKey(c.ID), hintKey(c.Type)
	for {
		res, err := s.Txn(ctx, Txn{If: []Cmp{Absent(ck), Absent(hk)}, Then: []Op{PutOp(ck, val, NoLease), PutOp(hk, hint, NoLease)}})
		if err != nil {
			return Conflict{}, false, err
		}
		if res.Succeeded {
			c.Revision = res.Revision
			return c, true, nil
		}
		if res.Current[0].ModRevision != 0 {
			return decodeConflict(res.Current[0])
		}
		// The type has a hint already: store the conflict alone.
		rev, err := s.CAS(ctx, ck, val, 0, NoLease)
		if errors.Is(err, ErrRevisionMismatch) {
			continue // recorded concurrently: read it back
		}
		if err != nil {
			return Conflict{}, false, err
		}
		c.Revision = rev
		return c, false, nil
	}
}

func decodeConflict(kv KV) (Conflict, bool, error) {
	var c Conflict
	if err := json.Unmarshal(kv.Value, &c); err != nil {
		return Conflict{}, false, fmt.Errorf("board: conflict record %q: %w", kv.Key, err)
	}
	c.Revision = kv.ModRevision
	return c, false, nil
}

// Conflicts returns every conflict record, ordered by ID.
func (s *Store) Conflicts(ctx context.Context) ([]Conflict, error) {
	kvs, _, err := s.List(ctx, PrefixConflicts)
	if err != nil {
		return nil, err
	}
	out := make([]Conflict, 0, len(kvs))
	for _, kv := range kvs {
		c, _, err := decodeConflict(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func decodeHint(kv KV) (Hint, error) {
	var h Hint
	if err := json.Unmarshal(kv.Value, &h); err != nil {
		return Hint{}, fmt.Errorf("board: hint record %q: %w", kv.Key, err)
	}
	h.Revision = kv.ModRevision
	return h, nil
}

// Hint returns the hint for a conflict type, or ErrNotFound.
func (s *Store) Hint(ctx context.Context, typ string) (Hint, error) {
	kv, err := s.Get(ctx, hintKey(typ))
	if err != nil {
		return Hint{}, err
	}
	return decodeHint(kv)
}

// Hints returns the hints in state ("" for all), ordered by type.
// Hints(ctx, HintPending) is the review queue; Hints(ctx, HintApproved) the
// hints to pass to workers.
func (s *Store) Hints(ctx context.Context, state HintState) ([]Hint, error) {
	kvs, _, err := s.List(ctx, PrefixHints)
	if err != nil {
		return nil, err
	}
	var out []Hint
	for _, kv := range kvs {
		h, err := decodeHint(kv)
		if err != nil {
			return nil, err
		}
		if state == "" || h.State == state {
			out = append(out, h)
		}
	}
	return out, nil
}

// ReviewHint moves the hint for typ from pending to to (approved or
// rejected), recording reviewer and note. Any other transition — reviewing a
// hint twice, or back to pending — fails with ErrBadTransition; a concurrent
// review is detected, so exactly one reviewer's decision stands.
func (s *Store) ReviewHint(ctx context.Context, typ string, to HintState, reviewer, note string) (Hint, error) {
	if to != HintApproved && to != HintRejected {
		return Hint{}, fmt.Errorf("review hint %s: to %q: %w", typ, to, ErrBadTransition)
	}
	for {
		h, err := s.Hint(ctx, typ)
		if err != nil {
			return Hint{}, err
		}
		if h.State != HintPending {
			return Hint{}, fmt.Errorf("review hint %s: %s -> %s: %w", typ, h.State, to, ErrBadTransition)
		}
		h.State, h.Reviewer, h.Note = to, reviewer, note
		val, err := json.Marshal(h)
		if err != nil {
			return Hint{}, err
		}
		rev, err := s.CAS(ctx, hintKey(typ), val, h.Revision, NoLease)
		if errors.Is(err, ErrRevisionMismatch) {
			continue // reviewed concurrently: re-read and re-check
		}
		if err != nil {
			return Hint{}, err
		}
		h.Revision = rev
		return h, nil
	}
}
