package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// PlotDirs is a PlotSource over the SVG and PNG files in directories (and
// their subdirectories, two levels down): the simulator's and the
// evaluations' plots, wherever they were written. A chart written both
// ways (name.svg beside name.png) is listed once, as its SVG. A plot's name is the
// directory's index and the file's path in it ("0/sim/makespan.svg"); files
// are opened through os.Root, so a name can never reach outside its
// directory. Missing directories are skipped.
type PlotDirs []string

var _ PlotSource = PlotDirs(nil)

// maxPlotSize bounds a plot file; bigger files are not listed.
const maxPlotSize = 8 << 20

// maxPlotDepth bounds how deep PlotDirs looks for files.
const maxPlotDepth = 2

var plotTypes = map[string]string{".svg": "image/svg+xml", ".png": "image/png"}

// Plots lists the plot files, directory by directory, in path order.
func (d PlotDirs) Plots(ctx context.Context) ([]Plot, error) {
	var out []Plot
	for i, dir := range d {
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if p == dir && errors.Is(err, fs.ErrNotExist) {
					return filepath.SkipDir
				}
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rel, rerr := filepath.Rel(dir, p)
			if rerr != nil {
				return rerr
			}
			depth := strings.Count(filepath.ToSlash(rel), "/")
			if e.IsDir() {
				if p != dir && (strings.HasPrefix(e.Name(), ".") || depth >= maxPlotDepth) {
					return filepath.SkipDir
				}
				return nil
			}
			ext := strings.ToLower(filepath.Ext(p))
			if plotTypes[ext] == "" || !e.Type().IsRegular() {
				return nil
			}
			if fi, err := e.Info(); err != nil || fi.Size() > maxPlotSize {
				return nil
			}
			slash := filepath.ToSlash(rel)
			title := strings.TrimSuffix(slash, path.Ext(slash))
			out = append(out, Plot{Name: strconv.Itoa(i) + "/" + slash, Title: title, Type: ext[1:]})
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("dashboard: plots in %s: %w", dir, err)
		}
	}
	svg := map[string]bool{}
	for _, p := range out {
		if p.Type == "svg" {
			svg[strings.TrimSuffix(p.Name, path.Ext(p.Name))] = true
		}
	}
	kept := out[:0]
	for _, p := range out {
		if p.Type == "png" && svg[strings.TrimSuffix(p.Name, path.Ext(p.Name))] {
			continue // the same chart as its SVG
		}
		kept = append(kept, p)
	}
	return kept, nil
}

// Plot reads one plot file.
func (d PlotDirs) Plot(_ context.Context, name string) ([]byte, string, error) {
	notFound := fmt.Errorf("%w: plot %q", ErrNotFound, name)
	idx, rel, ok := strings.Cut(name, "/")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= len(d) || strconv.Itoa(i) != idx || !fs.ValidPath(rel) {
		return nil, "", notFound
	}
	ctype := plotTypes[strings.ToLower(path.Ext(rel))]
	if ctype == "" || strings.Count(rel, "/") > maxPlotDepth || strings.HasPrefix(rel, ".") || strings.Contains(rel, "/.") {
		return nil, "", notFound
	}
	root, err := os.OpenRoot(d[i])
	if err != nil {
		return nil, "", notFound
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, "", notFound
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxPlotSize {
		return nil, "", notFound
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPlotSize))
	if err != nil {
		return nil, "", fmt.Errorf("dashboard: plot %s: %w", name, err)
	}
	return b, ctype, nil
}
