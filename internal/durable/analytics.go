package durable

import (
	"context"
	"regexp"
	"sort"
	"time"
)

// AnalyticsParams are rw.analytics's arguments.
type AnalyticsParams struct {
	Since         *string // ISO-8601; earlier rows are ignored everywhere
	SessionFilter *string // narrows only "sessions"
}

// analyticsPatterns match the chunk-part and checkpoint paths of journal
// rows under our state directory or Resilient Write's, so a journal carried
// over from either is understood.
func (w *Workspace) analyticsPatterns() (chunk, checkpoint *regexp.Regexp) {
	alts := regexp.QuoteMeta(w.state)
	if w.state != CompatStateDir {
		alts += "|" + regexp.QuoteMeta(CompatStateDir)
	}
	chunk = regexp.MustCompile(`^(?:` + alts + `)/chunks/([A-Za-z0-9_\-]{1,64})/part-\d{3}\.txt$`)
	checkpoint = regexp.MustCompile(`^(?:` + alts + `)/checkpoints/([A-Za-z0-9_\-]{1,64})\.json$`)
	return chunk, checkpoint
}

type sessionStats struct {
	chunkWrites, composes int
	first, last           string
}

type pathStats struct {
	writes int
	bytes  int64
	last   string
	order  int
}

// Analytics summarises the journal: totals, modes, callers, the last 50
// rows, the five hottest paths, chunk sessions, checkpoints, velocity and
// period. A bad since is policy_violation/encoding.
func (w *Workspace) Analytics(ctx context.Context, p AnalyticsParams) (Result, error) {
	if err := w.allow("rw.analytics", ""); err != nil {
		return nil, err
	}
	var since time.Time
	if p.Since != nil {
		t, err := parseISOTime(*p.Since)
		if err != nil {
			return nil, encodingErr("since_not_iso8601", map[string]any{"since": *p.Since})
		}
		since = t
	}
	rows, err := w.readJournal()
	if err != nil {
		return nil, err
	}
	chunkRe, cpRe := w.analyticsPatterns()
	total, totalBytes := 0, int64(0)
	byMode, byCaller := map[string]int{}, map[string]int{}
	paths := map[string]*pathStats{}
	timeline := []map[string]any{}
	sessions := map[string]*sessionStats{}
	cpSaves, cpOver := 0, 0
	cpByName := map[string]map[string]any{}
	minutes := map[string]int{}
	var minuteOrder []string
	first, last := "", ""
	for _, r := range rows {
		ts, _ := r["ts"].(string)
		if p.Since != nil {
			t, err := parseISOTime(ts)
			if err != nil || t.Before(since) {
				continue
			}
		}
		path, _ := r["path"].(string)
		n := int64(0)
		if v, ok := jsonInt(r["bytes"]); ok {
			n = int64(v)
		}
		mode, ok := r["mode"].(string)
		if !ok {
			mode = "unknown"
		}
		caller, ok := r["caller"].(string)
		if !ok {
			caller = "unknown"
		}
		total++
		totalBytes += n
		byMode[mode]++
		byCaller[caller]++
		ps := paths[path]
		if ps == nil {
			ps = &pathStats{order: len(paths)}
			paths[path] = ps
		}
		ps.writes++
		ps.bytes += n
		ps.last = ts
		timeline = append(timeline, map[string]any{"ts": ts, "path": path, "bytes": n, "mode": mode})
		if len(timeline) > 50 {
			timeline = timeline[len(timeline)-50:]
		}
		if total == 1 {
			first = ts
		}
		last = ts
		if len(ts) >= 16 {
			key := ts[:16] + "Z"
			if minutes[key] == 0 {
				minuteOrder = append(minuteOrder, key)
			}
			minutes[key]++
		}
		if m := cpRe.FindStringSubmatch(path); m != nil {
			cpSaves++
			if mode == ModeOverwrite {
				cpOver++
			}
			e := cpByName[m[1]]
			if e == nil {
				e = map[string]any{"saves": 0, "total_bytes": int64(0), "first_write": ts, "last_write": ts}
				cpByName[m[1]] = e
			}
			e["saves"] = e["saves"].(int) + 1
			e["total_bytes"] = e["total_bytes"].(int64) + n
			if ts != "" {
				e["last_write"] = ts
			}
		}
		if m := chunkRe.FindStringSubmatch(path); m != nil {
			if p.SessionFilter != nil && m[1] != *p.SessionFilter {
				continue
			}
			s := sessions[m[1]]
			if s == nil {
				s = &sessionStats{first: ts, last: ts}
				sessions[m[1]] = s
			}
			s.chunkWrites++
			if ts != "" {
				s.last = ts
			}
		} else {
			// Resilient Write counts any later non-chunk write as a
			// compose of every started session.
			for _, s := range sessions {
				if s.chunkWrites > 0 {
					s.composes++
				}
			}
		}
	}
	hot := make([]string, 0, len(paths))
	for k := range paths {
		hot = append(hot, k)
	}
	sort.Slice(hot, func(i, j int) bool {
		a, b := paths[hot[i]], paths[hot[j]]
		if a.writes != b.writes {
			return a.writes > b.writes
		}
		return a.order < b.order
	})
	hotPaths := []map[string]any{}
	for _, k := range hot[:min(5, len(hot))] {
		ps := paths[k]
		hotPaths = append(hotPaths, map[string]any{"path": k, "write_count": ps.writes, "total_bytes": ps.bytes, "last_write": ps.last})
	}
	sessOut := map[string]any{}
	for name, s := range sessions {
		sessOut[name] = map[string]any{
			"chunk_writes": s.chunkWrites, "composes": s.composes, "first_write": s.first, "last_write": s.last,
			"duration_seconds": spanSeconds(s.first, s.last),
		}
	}
	span := 0.0
	if first != "" && last != "" {
		span = spanSeconds(first, last)
	}
	wpm, avg := 0.0, 0.0
	if span > 0 {
		wpm = float64(total) / (span / 60)
	}
	if total > 0 {
		avg = float64(totalBytes) / float64(total)
	}
	var peak any
	best := 0
	for _, k := range minuteOrder {
		if minutes[k] > best {
			best, peak = minutes[k], k
		}
	}
	return Result{
		"ok": true, "total_writes": total, "unique_paths": len(paths), "total_bytes_written": totalBytes,
		"by_mode": byMode, "by_caller": byCaller, "timeline": timeline, "hot_paths": hotPaths, "sessions": sessOut,
		"checkpoints":    map[string]any{"total_saves": cpSaves, "overwrites": cpOver, "by_name": cpByName},
		"write_velocity": map[string]any{"writes_per_minute": wpm, "avg_bytes_per_write": avg, "peak_minute": peak},
		"period":         map[string]any{"first_entry": nullIfEmpty(first, total), "last_entry": nullIfEmpty(last, total), "duration_seconds": span},
	}, nil
}

func nullIfEmpty(s string, total int) any {
	if total == 0 {
		return nil
	}
	return s
}

// spanSeconds returns last − first in seconds, 0 if either is unparsable.
func spanSeconds(first, last string) float64 {
	a, err1 := parseISOTime(first)
	b, err2 := parseISOTime(last)
	if err1 != nil || err2 != nil {
		return 0
	}
	return b.Sub(a).Seconds()
}
