package review

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Review tasks keep what they leave — an agent's transcript and answer,
// its inputs, a reviewer's verdict, each task's envelope and findings —
// out of every place another task can reach while the stage runs:
//
//   - an agent task's live state (its home, temporary files, answer file,
//     transcript and the inputs it is given) is in a private directory of
//     its own, mode 0700 under a random name, outside the repository and
//     the review's folder, which no other task is told of; when the agent
//     exits the review reads what it needs into memory and removes the
//     directory;
//   - what a finished task leaves is held in memory and written to the
//     review's folder (.apiary/reviews/ID/tasks/NAME) only when its stage
//     is over: after every analyser of a round, after every reviewer has
//     answered;
//   - each agent works in a worktree of its own, and the integrity check
//     after each stage covers ignored files too, so notes left in a
//     checkout fail the review (see checkIntact).

// privateRoot makes the review's root of private directories.
func (rv *reviewRun) privateRoot() error {
	dir, err := os.MkdirTemp(rv.opt.TempDir, "apiary-review-")
	if err != nil {
		return fmt.Errorf("review: private state: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("review: private state: %w", err)
	}
	rv.priv = dir
	return nil
}

// privateDir makes one task's private directory.
func (rv *reviewRun) privateDir() (string, error) {
	dir, err := os.MkdirTemp(rv.priv, "t-")
	if err != nil {
		return "", fmt.Errorf("review: private state: %w", err)
	}
	for _, sub := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return "", fmt.Errorf("review: private state: %w", err)
		}
	}
	return dir, nil
}

// hold keeps a file a task leaves until its stage is over.
func (rv *reviewRun) hold(task, name string, data []byte) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.held[task] == nil {
		rv.held[task] = map[string][]byte{}
	}
	rv.held[task][name] = data
}

// holdJSON is hold of v as indented JSON.
func (rv *reviewRun) holdJSON(task, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	rv.hold(task, name, append(b, '\n'))
	return nil
}

// publish writes the held files to the review's folder.
func (rv *reviewRun) publish() error {
	rv.mu.Lock()
	held := rv.held
	rv.held = map[string]map[string][]byte{}
	rv.mu.Unlock()
	tasks := make([]string, 0, len(held))
	for t := range held {
		tasks = append(tasks, t)
	}
	sort.Strings(tasks)
	for _, t := range tasks {
		dir := rv.taskDir(t)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for name, data := range held[t] {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return fmt.Errorf("review: publishing %s of %s: %w", name, t, err)
			}
		}
	}
	return nil
}

// taskDir is where a task's files are published.
func (rv *reviewRun) taskDir(name string) string { return filepath.Join(rv.dir, "tasks", name) }

// maxTranscript bounds the transcript kept of an agent; a longer one
// keeps its end.
const maxTranscript = 32 << 20

// readTail reads a file, keeping its last max bytes.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(f, max))
		return append([]byte("[... the start of the transcript was cut ...]\n"), b...), err
	}
	return io.ReadAll(f)
}
