package rls

import (
	"context"
	"fmt"
	"strconv"

	confpb "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// XDSType is the type of the xDS resources a configuration is read from:
// go-control-plane's RateLimitConfig, one domain each, as
// envoyproxy/ratelimit subscribes to it with CONFIG_TYPE=GRPC_XDS_SOTW.
const XDSType = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// ParseXDS returns the configuration of an xDS server's RateLimitConfig
// resources, each one domain. Each is turned into the YAML a file would
// hold and checked by the one check of a file, so that a resource loads
// exactly when the same domain in a file would; errors name the resource
// (its name, else its place in the list) and the field. A resource is
// bounded as a file is, and a resource of another type is refused.
func ParseXDS(resources []*anypb.Any) (*Config, error) {
	c := &Config{domains: make(map[string]*node)}
	for i, res := range resources {
		where := fmt.Sprintf("xDS resource [%d]", i)
		if res.GetTypeUrl() != XDSType {
			return nil, fmt.Errorf("rls: %s: type %q: want %s", where, res.GetTypeUrl(), XDSType)
		}
		if n := proto.Size(res); n > maxFileBytes {
			return nil, fmt.Errorf("rls: %s: %d bytes: larger than %d MiB, the bound of a configuration file", where, n, maxFileBytes>>20)
		}
		var rc confpb.RateLimitConfig
		if err := res.UnmarshalTo(&rc); err != nil {
			return nil, fmt.Errorf("rls: %s: %w", where, err)
		}
		if rc.Name != "" {
			where = fmt.Sprintf("xDS resource %q", rc.Name)
		}
		if err := c.addRoot(reader{file: where}, xdsRoot(&rc)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// LoadXDS loads the configuration of an xDS server's resources (see
// [ParseXDS]) and reloads with it. When they cannot be loaded, the service
// keeps deciding by the one it has, the failure is counted, and the error
// returned, as [Service.LoadFile] does.
func (s *Service) LoadXDS(resources []*anypb.Any) error {
	cfg, err := ParseXDS(resources)
	if err != nil {
		s.metrics.loads.Add(context.Background(), 1, s.metrics.loadOpts[0]...)
		return err
	}
	return s.Reload(cfg)
}

// xdsRoot is the mapping a file of rc's domain holds: the fields
// envoyproxy/ratelimit's conversion carries, those left at their zero
// value left out, as a file leaves them out.
func xdsRoot(rc *confpb.RateLimitConfig) *yaml.Node {
	var m mapping
	m.str("domain", rc.Domain)
	m.list("descriptors", xdsDescriptors(rc.Descriptors))
	return m.node()
}

func xdsDescriptors(list []*confpb.RateLimitDescriptor) []*yaml.Node {
	out := make([]*yaml.Node, 0, len(list))
	for _, d := range list {
		var m mapping
		m.str("key", d.GetKey())
		m.str("value", d.GetValue())
		if p := d.GetRateLimit(); p != nil {
			var rm mapping
			rm.str("unit", xdsUnit(p))
			if p.RequestsPerUnit != 0 {
				rm.add("requests_per_unit", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(uint64(p.RequestsPerUnit), 10)})
			}
			rm.boolean("unlimited", p.Unlimited)
			rm.str("name", p.Name)
			replaces := make([]*yaml.Node, 0, len(p.Replaces))
			for _, r := range p.Replaces {
				var em mapping
				em.str("name", r.GetName())
				replaces = append(replaces, em.node())
			}
			rm.list("replaces", replaces)
			m.add("rate_limit", rm.node())
		}
		m.list("descriptors", xdsDescriptors(d.GetDescriptors()))
		m.boolean("shadow_mode", d.GetShadowMode())
		m.boolean("detailed_metric", d.GetDetailedMetric())
		out = append(out, m.node())
	}
	return out
}

// xdsUnit is a policy's unit as a file spells it: the enum's name, or ""
// for UNKNOWN, which a file says by leaving the unit out.
func xdsUnit(p *confpb.RateLimitPolicy) string {
	if p.Unit == confpb.RateLimitUnit_UNKNOWN {
		return ""
	}
	return p.Unit.String()
}

// mapping builds a YAML mapping node.
type mapping struct{ content []*yaml.Node }

func (m *mapping) add(key string, v *yaml.Node) {
	m.content = append(m.content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func (m *mapping) str(key, v string) {
	if v != "" {
		m.add(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle})
	}
}

func (m *mapping) boolean(key string, v bool) {
	if v {
		m.add(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
}

func (m *mapping) list(key string, l []*yaml.Node) {
	if len(l) > 0 {
		m.add(key, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: l})
	}
}

func (m *mapping) node() *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: m.content}
}
