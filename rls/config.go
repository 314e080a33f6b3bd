package rls

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"

	"github.com/admitgo/admit/internal/yamlmap"
	"github.com/admitgo/admit/quota"
)

// maxFileBytes bounds one configuration file. Real files are a few
// kilobytes; the bound keeps a mistaken path (a log, a device) from being
// read whole.
const maxFileBytes = 16 << 20

// Config is a loaded configuration: envoyproxy/ratelimit's YAML, one domain
// per file, read and checked as it reads and checks them. A Config never
// changes once loaded and is safe for concurrent use; the zero Config has
// no domains, so every descriptor is unknown to it.
type Config struct {
	domains map[string]*node
	files   []string
}

// node is one level of a domain's descriptor tree.
type node struct {
	children        map[string]*node // by key, or key + "_" + value
	rule            *rule            // nil: no limit at this level
	wildcards       []string         // children's keys that end in "*", in file order
	valueToMetric   bool
	shareThreshold  bool
	wildcardPattern string // the key of a share_threshold wildcard
}

// rule is a descriptor's rate_limit.
type rule struct {
	fullKey                            string // the descriptor's path, as metrics name it
	limit                              *pb.RateLimitResponse_RateLimit
	window                             time.Duration
	unlimited, shadow, quota, detailed bool
	override                           bool // a descriptor's own limit, named by its values
	name                               string
	replaces                           []string
	// bucket, when not nil, makes the rule admit's token bucket, decided
	// by the limiter instead of counted in windows (see bucket.go).
	bucket *quota.Rule
}

// Domains returns the configured domains, sorted.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Load reads the configuration at path: one YAML file, or a directory whose
// regular files (in subdirectories too, names starting with "." left out)
// each hold one domain. A domain given twice is refused, as
// envoyproxy/ratelimit refuses it by default. Errors name the file, line
// and field.
func Load(path string) (*Config, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("rls: config %q: %w", path, err)
	}
	files := []string{path}
	if info.IsDir() {
		if files, err = configFiles(path); err != nil {
			return nil, err
		}
	}
	c := &Config{domains: make(map[string]*node)}
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			return nil, err
		}
		if err := c.add(f, data); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Parse returns the configuration of one file's contents; name is what
// errors call the file.
func Parse(name string, data []byte) (*Config, error) {
	c := &Config{domains: make(map[string]*node)}
	if err := c.add(name, data); err != nil {
		return nil, err
	}
	return c, nil
}

// configFiles lists the files of dir in lexical order.
func configFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rls: config %q: %w", dir, err)
	}
	return files, nil
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("rls: config %q: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("rls: config %q: %w", name, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("rls: config %q: larger than %d MiB", name, maxFileBytes>>20)
	}
	return data, nil
}

// add loads one file's domain into c.
func (c *Config) add(file string, data []byte) error {
	r := reader{file: file}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return syntaxError(file, err)
	}
	if err := yamlmap.CheckAliases(&doc); err != nil {
		return r.aliasError(err)
	}
	root := &yaml.Node{Kind: yaml.MappingNode}
	if len(doc.Content) > 0 && doc.Content[0].Tag != "!!null" {
		root = doc.Content[0]
	}
	return c.addRoot(r, root)
}

// addRoot loads one domain, the mapping root, into c: the one check of a
// domain, whether its nodes came from a file or an xDS resource (xds.go).
func (c *Config) addRoot(r reader, root *yaml.Node) error {
	file := r.file
	m, err := r.fields(root, "")
	if err != nil {
		return err
	}
	domain, err := r.str(m, "domain", "")
	if err != nil {
		return err
	}
	if domain == "" {
		return r.errorf(root, "domain", "missing or empty: every file names its domain")
	}
	if _, dup := c.domains[domain]; dup {
		return r.errorf(m["domain"], "domain", "%q is already configured by another file", domain)
	}
	list, err := r.list(m, "descriptors", "")
	if err != nil {
		return err
	}
	top := &node{children: make(map[string]*node)}
	if err := r.descriptors(top, domain+".", list, "descriptors"); err != nil {
		return err
	}
	c.domains[domain] = top
	c.files = append(c.files, file)
	return nil
}

// A namedBucket is one token bucket of a configuration and where it is:
// the domain and the path of its descriptor.
type namedBucket struct {
	rule  quota.Rule
	where string
}

// buckets returns every token bucket of c, by domain and descriptor path
// in sorted order, for a limiter to check before any call.
func (c *Config) buckets() []namedBucket {
	var out []namedBucket
	var walk func(n *node, where string)
	walk = func(n *node, where string) {
		if n.rule != nil && n.rule.bucket != nil {
			out = append(out, namedBucket{*n.rule.bucket, where})
		}
		for _, k := range slices.Sorted(maps.Keys(n.children)) {
			walk(n.children[k], where+"."+k)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(c.domains)) {
		walk(c.domains[d], d)
	}
	return out
}
