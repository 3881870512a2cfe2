package helm

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// staticChartsPath is where k3s serves the chart archives its HelmCharts
// name (https://%{KUBERNETES_API}%/static/charts/NAME.tgz); k1s reads them
// from <data-dir>/server/static/charts instead of fetching them.
const staticChartsPath = "/static/charts/"

// chartSource is where a chart comes from: an archive's bytes, a local
// file, or a repository (only the last needs the network).
type chartSource struct {
	archive []byte // inline or read from a local file
	path    string // a local chart directory
	repo    string // chart name in repo, or a remote URL
}

// locate finds the HelmChart's chart, without the network: chartContent
// (base64 of a .tgz); a /static/charts/ URL (any host) read from
// staticDir; a path relative to manifestsDir; else the chart is remote
// (spec.repo or an http(s)/oci URL) and fetched later.
func locate(spec *HelmChartSpec, manifestsDir, staticDir string) (chartSource, error) {
	if spec.ChartContent != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(spec.ChartContent))
		if err != nil {
			return chartSource{}, fmt.Errorf("spec.chartContent: not base64: %w", err)
		}
		return chartSource{archive: b}, nil
	}
	if spec.Chart == "" {
		return chartSource{}, errors.New("spec.chart or spec.chartContent is required")
	}
	if u, err := url.Parse(spec.Chart); err == nil && u.Scheme != "" {
		if strings.HasPrefix(u.Path, staticChartsPath) && (u.Scheme == "https" || u.Scheme == "http") {
			return readLocal(staticDir, strings.TrimPrefix(u.Path, staticChartsPath), "spec.chart")
		}
		return chartSource{repo: spec.Chart}, nil
	}
	if strings.HasPrefix(spec.Chart, "https://%{") || strings.Contains(spec.Chart, staticChartsPath) {
		_, rest, _ := strings.Cut(spec.Chart, staticChartsPath)
		return readLocal(staticDir, rest, "spec.chart")
	}
	if spec.Repo != "" {
		return chartSource{repo: spec.Chart}, nil
	}
	return readLocal(manifestsDir, spec.Chart, "spec.chart")
}

// readLocal reads rel under dir, refusing a path that leaves it.
func readLocal(dir, rel, field string) (chartSource, error) {
	clean := filepath.Clean("/" + rel)
	if rel == "" || clean == "/" {
		return chartSource{}, fmt.Errorf("%s: %q names no chart", field, rel)
	}
	p := filepath.Join(dir, clean)
	fi, err := os.Stat(p)
	if err != nil {
		return chartSource{}, fmt.Errorf("%s: chart %q not found in %s (and no spec.repo)", field, rel, dir)
	}
	if fi.IsDir() {
		return chartSource{path: p}, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return chartSource{}, fmt.Errorf("%s: %w", field, err)
	}
	return chartSource{archive: b}, nil
}

// load reads a local chart source.
func (s chartSource) load() (*chart.Chart, error) {
	switch {
	case s.archive != nil:
		return loader.LoadArchive(bytes.NewReader(s.archive))
	case s.path != "":
		return loader.Load(s.path)
	}
	return nil, errors.New("the chart is remote")
}

// values merges the chart's values as helm-controller does, later winning:
// the HelmChart's valuesContent, its values, the HelmChartConfig's
// valuesContent, its values, then spec.set.
func values(spec *HelmChartSpec, cfg *HelmChartConfigSpec) (map[string]any, error) {
	out := map[string]any{}
	layer := func(field, content string) error {
		if strings.TrimSpace(content) == "" {
			return nil
		}
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(content), &m); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		merge(out, m)
		return nil
	}
	raw := func(j []byte) string { return string(j) }
	if err := layer("spec.valuesContent", spec.ValuesContent); err != nil {
		return nil, err
	}
	if spec.Values != nil {
		if err := layer("spec.values", raw(spec.Values.Raw)); err != nil {
			return nil, err
		}
	}
	if cfg != nil {
		if err := layer("HelmChartConfig spec.valuesContent", cfg.ValuesContent); err != nil {
			return nil, err
		}
		if cfg.Values != nil {
			if err := layer("HelmChartConfig spec.values", raw(cfg.Values.Raw)); err != nil {
				return nil, err
			}
		}
	}
	keys := make([]string, 0, len(spec.Set))
	for k := range spec.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := spec.Set[k]
		var err error
		switch {
		case v.Type == intstr.Int:
			err = strvals.ParseInto(k+"="+v.String(), out)
		case v.StrVal == "true" || v.StrVal == "false":
			err = strvals.ParseInto(k+"="+v.StrVal, out)
		default:
			err = strvals.ParseIntoString(k+"="+v.StrVal, out)
		}
		if err != nil {
			return nil, fmt.Errorf("spec.set[%s]: %w", k, err)
		}
	}
	return out, nil
}

// merge copies src into dst, maps merged key by key, anything else replaced.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// configHash identifies what an install would do: the chart (its bytes,
// or its reference), the values and the target. A HelmChart whose hash is
// the one recorded is not upgraded again.
func configHash(src chartSource, spec *HelmChartSpec, vals map[string]any, namespace string) string {
	h := sha256.New()
	h.Write(src.archive)
	fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00%s\x00%s\x00", src.path, src.repo, spec.Repo, spec.Version, namespace)
	if src.path != "" {
		// A chart directory: hash its files' names and sizes and times.
		_ = filepath.Walk(src.path, func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				fmt.Fprintf(h, "%s %d %d\x00", p, fi.Size(), fi.ModTime().UnixNano())
			}
			return nil
		})
	}
	j, _ := json.Marshal(vals) // maps marshal with sorted keys
	h.Write(j)
	return hex.EncodeToString(h.Sum(nil))
}
