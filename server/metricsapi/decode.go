package metricsapi

import (
	"bytes"
	"fmt"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// decode reads an agent's /metrics/resource: the node's and each
// container's cumulative CPU seconds and working set, with their sample
// timestamps, and the containers' start times. Series it does not know
// are ignored; a container without both CPU and memory is left out, as
// metrics-server leaves it.
func decode(body []byte, scrapedAt time.Time) (nodeBatch, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nodeBatch{}, fmt.Errorf("decode /metrics/resource: %w", err)
	}
	b := nodeBatch{containers: map[containerKey]point{}}
	ts := func(m *dto.Metric) time.Time {
		if m.TimestampMs != nil {
			return time.UnixMilli(m.GetTimestampMs())
		}
		return scrapedAt
	}
	value := func(m *dto.Metric) float64 {
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
		return math.NaN()
	}
	key := func(m *dto.Metric) (containerKey, bool) {
		var k containerKey
		for _, l := range m.Label {
			switch l.GetName() {
			case "namespace":
				k.namespace = l.GetValue()
			case "pod":
				k.pod = l.GetValue()
			case "container":
				k.container = l.GetValue()
			}
		}
		return k, k.namespace != "" && k.pod != "" && k.container != ""
	}
	var nodeCPU, nodeMem *point
	type partial struct {
		p              point
		hasCPU, hasMem bool
	}
	parts := map[containerKey]*partial{}
	get := func(k containerKey) *partial {
		if parts[k] == nil {
			parts[k] = &partial{}
		}
		return parts[k]
	}
	for name, mf := range families {
		for _, m := range mf.Metric {
			v := value(m)
			if math.IsNaN(v) || v < 0 {
				continue
			}
			switch name {
			case "node_cpu_usage_seconds_total":
				nodeCPU = &point{at: ts(m), cpu: uint64(v * 1e9)}
			case "node_memory_working_set_bytes":
				nodeMem = &point{at: ts(m), memory: uint64(v)}
			case "container_cpu_usage_seconds_total":
				if k, ok := key(m); ok {
					pp := get(k)
					pp.p.cpu, pp.p.at, pp.hasCPU = uint64(v*1e9), ts(m), true
				}
			case "container_memory_working_set_bytes":
				if k, ok := key(m); ok {
					pp := get(k)
					pp.p.memory, pp.hasMem = uint64(v), true
				}
			case "container_start_time_seconds":
				if k, ok := key(m); ok {
					sec, frac := math.Modf(v)
					get(k).p.started = time.Unix(int64(sec), int64(frac*1e9))
				}
			}
		}
	}
	if nodeCPU != nil && nodeMem != nil {
		nodeCPU.memory = nodeMem.memory
		b.node = nodeCPU
	}
	for k, pp := range parts {
		if pp.hasCPU && pp.hasMem {
			b.containers[k] = pp.p
		}
	}
	return b, nil
}
