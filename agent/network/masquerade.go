package network

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
)

// MasqueradeChain is the nat chain holding the pod masquerade rules.
const MasqueradeChain = "K1S-POSTROUTING"

const jumpComment = "k1s pod masquerade"

// Runner runs a command with stdin and returns its combined output.
type Runner func(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)

// ExecRunner runs commands with os/exec.
func ExecRunner(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", name, err, bytes.TrimSpace(out))
	}
	return out, nil
}

// masqueradeRules is the iptables-restore input that (re)writes the chain:
// traffic from the node's pods keeps its source inside the cluster CIDR and
// to multicast, and is masqueraded anywhere else.
func masqueradeRules(podCIDR, clusterCIDR *net.IPNet) []byte {
	var b bytes.Buffer
	b.WriteString("*nat\n")
	fmt.Fprintf(&b, ":%s - [0:0]\n", MasqueradeChain)
	fmt.Fprintf(&b, "-A %s -s %s -d %s -m comment --comment \"k1s: pod to cluster, no masquerade\" -j RETURN\n", MasqueradeChain, podCIDR, clusterCIDR)
	fmt.Fprintf(&b, "-A %s -s %s -d 224.0.0.0/4 -m comment --comment \"k1s: multicast, no masquerade\" -j RETURN\n", MasqueradeChain, podCIDR)
	fmt.Fprintf(&b, "-A %s -s %s -m comment --comment \"k1s: pod to outside the cluster\" -j MASQUERADE\n", MasqueradeChain, podCIDR)
	b.WriteString("COMMIT\n")
	return b.Bytes()
}

// EnsureMasquerade makes pod traffic from podCIDR to outside clusterCIDR
// leave with the node's address (iptables nat table, IPv4). It replaces the
// K1S-POSTROUTING chain's rules in one iptables-restore transaction and
// makes sure POSTROUTING jumps to it; calling it again with other CIDRs
// replaces the rules. The agent calls it with the pod CIDR it wrote the
// conflist for.
func EnsureMasquerade(ctx context.Context, run Runner, podCIDR, clusterCIDR *net.IPNet) error {
	if podCIDR == nil || clusterCIDR == nil {
		return fmt.Errorf("masquerade: pod CIDR and cluster CIDR are required")
	}
	if run == nil {
		run = ExecRunner
	}
	if _, err := run(ctx, masqueradeRules(podCIDR, clusterCIDR), "iptables-restore", "-w", "--noflush"); err != nil {
		return fmt.Errorf("masquerade: write %s: %w", MasqueradeChain, err)
	}
	jump := []string{"-t", "nat", "POSTROUTING", "-m", "comment", "--comment", jumpComment, "-j", MasqueradeChain}
	if _, err := run(ctx, nil, "iptables", checkArgs("-C", jump)...); err == nil {
		return nil
	}
	if _, err := run(ctx, nil, "iptables", checkArgs("-A", jump)...); err != nil {
		return fmt.Errorf("masquerade: jump to %s: %w", MasqueradeChain, err)
	}
	return nil
}

// DeleteMasquerade removes the jump and the chain (k1s killall). Missing
// rules are not an error.
func DeleteMasquerade(ctx context.Context, run Runner) error {
	if run == nil {
		run = ExecRunner
	}
	jump := []string{"-t", "nat", "POSTROUTING", "-m", "comment", "--comment", jumpComment, "-j", MasqueradeChain}
	// Delete every copy of the jump.
	for range 10 {
		if _, err := run(ctx, nil, "iptables", checkArgs("-D", jump)...); err != nil {
			break
		}
	}
	if _, err := run(ctx, nil, "iptables", "-w", "-t", "nat", "-S", MasqueradeChain); err != nil {
		return nil // no chain
	}
	if _, err := run(ctx, nil, "iptables", "-w", "-t", "nat", "-F", MasqueradeChain); err != nil {
		return fmt.Errorf("masquerade: flush %s: %w", MasqueradeChain, err)
	}
	if _, err := run(ctx, nil, "iptables", "-w", "-t", "nat", "-X", MasqueradeChain); err != nil {
		return fmt.Errorf("masquerade: delete %s: %w", MasqueradeChain, err)
	}
	return nil
}

// checkArgs puts op (-C, -A, -D) before the chain of a rule spec that starts
// with "-t table chain".
func checkArgs(op string, spec []string) []string {
	out := []string{"-w", spec[0], spec[1], op}
	return append(out, spec[2:]...)
}
