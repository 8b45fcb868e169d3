package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// MaxFindings bounds the findings one analyser may report; ParseFindings
// refuses more.
const MaxFindings = 1000

// ParseFindings reads the findings an agent analyser reported: a JSON array
// of findings or an object {"findings": [...]}, alone or inside free text
// (a ```json fence, or the outermost brackets of the text). Fields other
// than a Finding's are ignored; every finding is normalized (see
// Finding.Normalize). An empty list is a valid report. Errors wrap
// ErrFinding and name the offending item.
func ParseFindings(text string) ([]Finding, error) {
	raw := ExtractJSON(text)
	if raw == nil {
		return nil, fmt.Errorf("%w: no JSON findings in the output", ErrFinding)
	}
	var items []json.RawMessage
	if raw[0] == '{' {
		var doc struct {
			Findings *[]json.RawMessage `json:"findings"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFinding, err)
		}
		if doc.Findings == nil {
			return nil, fmt.Errorf("%w: object without a findings array", ErrFinding)
		}
		items = *doc.Findings
	} else if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFinding, err)
	}
	if len(items) > MaxFindings {
		return nil, fmt.Errorf("%w: %d findings (at most %d)", ErrFinding, len(items), MaxFindings)
	}
	out := make([]Finding, 0, len(items))
	for i, it := range items {
		var f Finding
		if err := json.Unmarshal(it, &f); err != nil {
			return nil, fmt.Errorf("%w: findings[%d]: %v", ErrFinding, i, err)
		}
		f.ID, f.Analyser = "", ""
		if err := f.Normalize(); err != nil {
			return nil, fmt.Errorf("findings[%d]: %w", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// ExtractJSON finds the JSON document in an agent's free-text answer: the
// whole text if it is JSON, else the first ```json (or ```) fence that
// holds valid JSON, else the span from the first '{' or '[' to the last
// matching '}' or ']' if that is valid JSON. It returns nil when there is
// none. Only objects and arrays count.
func ExtractJSON(text string) []byte {
	t := strings.TrimSpace(text)
	if isDoc(t) {
		return []byte(t)
	}
	rest := t
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		rest = rest[i+3:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		lang := strings.TrimSpace(rest[:nl])
		body := rest[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			break
		}
		if lang == "" || strings.EqualFold(lang, "json") {
			if b := strings.TrimSpace(body[:end]); isDoc(b) {
				return []byte(b)
			}
		}
		rest = body[end+3:]
	}
	for _, pair := range [][2]byte{{'{', '}'}, {'[', ']'}} {
		i := strings.IndexByte(t, pair[0])
		j := strings.LastIndexByte(t, pair[1])
		if i >= 0 && j > i && isDoc(t[i:j+1]) {
			return []byte(t[i : j+1])
		}
	}
	return nil
}

// isDoc reports whether s is one valid JSON object or array.
func isDoc(s string) bool {
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return false
	}
	return json.Valid([]byte(s)) && bytes.Equal(bytes.TrimSpace([]byte(s)), []byte(s))
}
