package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/govledger/govledger/internal/strictjson"
)

// Load reads an agent registry from the file system. A path naming a
// directory loads a skills folder (its */SKILL.md files, one level deep; see
// ParseSkills), or, when it holds no */SKILL.md but *.md files, a Claude
// Code subagents folder (see ParseSubagents), or, when it holds neither but
// *.json files, an A2A Agent Cards folder (see ParseAgentCards); any other
// path loads a prompt-manifest.json (see Parse),
// whose prompt paths are relative to the file's folder.
//
// Beyond the lexical rules, Load checks every prompt path through an
// os.Root opened on the registry folder: a path that resolves, through
// symbolic links, outside the folder, or to something other than a regular
// file, is an ErrPathEscape error. Symbolic links that stay inside the
// folder are followed. A prompt file that does not exist is not an error
// here: the lock check reports it as MISSING_FILE. In a skills folder,
// entries that are symbolic links are refused. All problems are returned
// together as an ErrorList; a file that cannot be read is returned as is.
func Load(path string) (*Registry, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return loadSkills(path)
	}
	data, err := readFileMax(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	reg, err := Parse(path, data, dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if errs := checkFiles(root, reg, path, data); len(errs) > 0 {
		return nil, errs
	}
	return reg, nil
}

// checkFiles stats every distinct prompt path through root, in parallel.
func checkFiles(root *os.Root, reg *Registry, name string, data []byte) ErrorList {
	first := map[string]int{}
	var order []int
	for i, a := range reg.Agents {
		if _, ok := first[a.PromptPath]; !ok {
			first[a.PromptPath] = i
			order = append(order, i)
		}
	}
	// One root per folder (up to 256) makes the common case, a regular
	// file, one fstatat; anything else takes the full walk from root.
	subs := map[string]*os.Root{}
	defer func() {
		for _, r := range subs {
			if r != nil {
				r.Close()
			}
		}
	}()
	for _, i := range order {
		folder, _ := path.Split(reg.Agents[i].PromptPath)
		folder = strings.TrimSuffix(folder, "/")
		if _, ok := subs[folder]; ok || folder == "" || len(subs) >= 256 {
			continue
		}
		r, err := root.OpenRoot(filepath.FromSlash(folder))
		if err != nil {
			r = nil
		}
		subs[folder] = r
	}
	results := make([]error, len(reg.Agents))
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(runtime.NumCPU(), len(order))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := reg.Agents[i].PromptPath
				folder, file := path.Split(p)
				if sub := subs[strings.TrimSuffix(folder, "/")]; sub != nil {
					if fi, err := sub.Lstat(file); err == nil && fi.Mode().IsRegular() {
						continue
					}
				}
				results[i] = checkFile(root, p)
			}
		}()
	}
	for _, i := range order {
		work <- i
	}
	close(work)
	wg.Wait()
	var errs ErrorList
	var loc locator
	for _, i := range order {
		if results[i] == nil {
			continue
		}
		var s site
		if reg.FromSkills {
			s = site{file: filepath.Join(reg.Dir, filepath.FromSlash(reg.Agents[i].PromptPath)), line: 1, col: 1}
		} else {
			if loc == nil {
				loc = agentLocator(strictjson.NewPositions(data), name)
			}
			s = loc(i, "prompt_path")
		}
		errs = append(errs, &Error{File: s.file, Line: s.line, Col: s.col, Field: s.field, Err: results[i]})
	}
	return errs
}

// checkFile resolves p inside root; a missing file is fine.
func checkFile(root *os.Root, p string) error {
	fi, err := root.Stat(filepath.FromSlash(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrPathEscape, quote(p), unwrapPath(err))
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrPathEscape, quote(p), fi.Mode().Type())
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func loadSkills(dir string) (*Registry, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, err
	}
	if isSubagentsFolder(root, entries) {
		return loadSubagents(dir, root, entries)
	}
	if isCardsFolder(root, entries) {
		return loadCards(dir, root, entries)
	}
	var (
		files []SkillFile
		errs  ErrorList
	)
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			errs = append(errs, &Error{File: filepath.Join(dir, name),
				Err: fmt.Errorf("%w: skill folder %s is a symbolic link", ErrPathEscape, quote(name))})
			continue
		case !e.IsDir():
			continue
		}
		p := name + "/" + skillFile
		fi, err := root.Lstat(filepath.FromSlash(p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, err
		case fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular():
			errs = append(errs, &Error{File: filepath.Join(dir, name, skillFile),
				Err: fmt.Errorf("%w: %s is not a regular file", ErrPathEscape, quote(p))})
			continue
		case fi.Size() > MaxFileSize:
			errs = append(errs, &Error{File: filepath.Join(dir, name, skillFile),
				Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), MaxFileSize)})
			continue
		}
		data, err := root.ReadFile(filepath.FromSlash(p))
		if err != nil {
			return nil, err
		}
		files = append(files, SkillFile{Path: p, Data: data})
	}
	if len(files) == 0 && len(errs) == 0 {
		return nil, ErrorList{{File: dir, Err: fmt.Errorf("%w: looked for skills (<folder>/SKILL.md), Claude Code subagent files (<name>.md) and A2A Agent Cards (<agent_id>.json) in the folder, found none", ErrNoAgents)}}
	}
	reg, err := ParseSkills(dir, files)
	var list ErrorList
	if errors.As(err, &list) {
		errs = append(errs, list...)
	} else if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return reg, nil
}

// readFileMax reads at most limit bytes of name, failing with ErrTooLarge
// when there are more.
func readFileMax(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, ErrorList{{File: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}}
	}
	return data, nil
}

// isSubagentsFolder reports whether a registry folder is a Claude Code
// subagents folder: *.md files at its top level and no */SKILL.md.
func isSubagentsFolder(root *os.Root, entries []fs.DirEntry) bool {
	md := false
	for _, e := range entries {
		if e.IsDir() {
			if _, err := root.Lstat(filepath.Join(e.Name(), skillFile)); err == nil {
				return false
			}
			continue
		}
		if strings.HasSuffix(e.Name(), ".md") {
			md = true
		}
	}
	return md
}
