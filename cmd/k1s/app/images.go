package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/k1s/k1s/embed/containerd"
	"github.com/k1s/k1s/internal/images"
)

// imagesCommand is `k1s images import|list`: images by hand, without a
// registry, against the running containerd.
func imagesCommand() *cli.Command {
	endpoint := &cli.StringFlag{
		Name:    "container-runtime-endpoint",
		Usage:   "CRI endpoint of the containerd to use",
		Value:   containerd.DefaultEndpoint,
		EnvVars: []string{"K1S_CONTAINER_RUNTIME_ENDPOINT"},
	}
	return &cli.Command{
		Name:  "images",
		Usage: "import image archives into k1s's containerd and list its images",
		Subcommands: []*cli.Command{
			{
				Name:      "import",
				Usage:     "import image archives (OCI layout or docker save; .tar, .tar.gz, .tar.zst)",
				ArgsUsage: "FILE...",
				Flags:     []cli.Flag{endpoint},
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return errors.New("k1s images import: name at least one image archive")
					}
					return importImages(c.Context, c.App.Writer, c.String("container-runtime-endpoint"), c.Args().Slice())
				},
			},
			{
				Name:  "list",
				Usage: "list the images the container runtime has",
				Flags: []cli.Flag{endpoint},
				Action: func(c *cli.Context) error {
					return listImages(c.Context, c.App.Writer, c.String("container-runtime-endpoint"))
				},
			},
		},
	}
}

// importImages imports each file, always (no import state is kept for
// imports by hand), and prints the names stored.
func importImages(ctx context.Context, out io.Writer, endpoint string, files []string) error {
	var archives []images.Archive
	for _, f := range files {
		a, err := images.FileArchive(f)
		if err != nil {
			return err
		}
		archives = append(archives, a)
	}
	imp, err := images.New(endpoint, images.Options{})
	if err != nil {
		return err
	}
	defer imp.Close()
	res, err := imp.Import(ctx, archives...)
	for _, r := range res {
		fmt.Fprintf(out, "%s: imported %s\n", r.Archive, strings.Join(r.Images, ", "))
	}
	return err
}

// listImages prints the runtime's images as the CRI reports them.
func listImages(ctx context.Context, out io.Writer, endpoint string) error {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := runtimeapi.NewImageServiceClient(conn).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return fmt.Errorf("list images at %s (is k1s running?): %w", endpoint, err)
	}
	return printImages(out, resp.Images)
}

// printImages writes one line per name (an image without one shows as
// <none>), sorted by name.
func printImages(out io.Writer, imgs []*runtimeapi.Image) error {
	type row struct{ name, id, size, pinned string }
	var rows []row
	for _, img := range imgs {
		id := strings.TrimPrefix(img.Id, "sha256:")
		if len(id) > 12 {
			id = id[:12]
		}
		pinned := ""
		if img.Pinned {
			pinned = "pinned"
		}
		names := img.RepoTags
		if len(names) == 0 {
			names = []string{"<none>"}
		}
		for _, n := range names {
			rows = append(rows, row{n, id, humanSize(img.GetSize()), pinned})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tIMAGE ID\tSIZE\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, r.id, r.size, r.pinned)
	}
	return tw.Flush()
}

func humanSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
