package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	etcderrors "go.etcd.io/etcd/server/v3/etcdserver/errors"
	"k8s.io/klog/v2"
)

// Member is one member of the cluster, as a joining server and an
// operator see it.
type Member struct {
	// ID is etcd's member ID in hex.
	ID string `json:"id"`
	// Name is empty until the member has started.
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
	// IsLearner: the member receives the log but does not vote yet.
	IsLearner bool `json:"isLearner,omitempty"`
}

// Members lists the cluster's members through this member.
func (s *Server) Members(ctx context.Context) ([]Member, error) {
	cli, err := s.LocalClient()
	if err != nil {
		return nil, err
	}
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list etcd members: %w", err)
	}
	out := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, Member{ID: fmt.Sprintf("%x", m.ID), Name: m.Name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner})
	}
	return out, nil
}

// AddLearner makes room in the cluster for a new member named name at
// peerURL, a learner until it has caught up (it promotes itself, see
// Config.InitialCluster), and returns the initial cluster it starts
// with. A member already at peerURL is kept when it has not started yet
// (a join tried again) and otherwise removed: it is the same server back
// with an empty data directory, which cannot take its old place. etcd
// takes one learner at a time, and a new member only through a member
// connected to its peers for 5 s: until then AddLearner waits (until ctx
// is done).
func (s *Server) AddLearner(ctx context.Context, name, peerURL string) (string, error) {
	if s.cfg.PeerIP == nil {
		return "", errors.New("this server's etcd is not one of a cluster: start it with --cluster-init for others to join")
	}
	cli, err := s.LocalClient()
	if err != nil {
		return "", err
	}
	return addLearner(ctx, cli, name, peerURL)
}

func addLearner(ctx context.Context, cli *clientv3.Client, name, peerURL string) (string, error) {
	logger := klog.FromContext(ctx)
	list, err := cli.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("list etcd members: %w", err)
	}
	var id uint64
	all := list.Members
	for _, m := range list.Members {
		if !slices.Contains(m.PeerURLs, peerURL) {
			continue
		}
		if m.Name == "" {
			id = m.ID
			continue
		}
		logger.Info("Removing the etcd member at a joining server's peer URL: it comes back without its data", "member", m.Name, "peerURL", peerURL)
		resp, err := cli.MemberRemove(ctx, m.ID)
		if err != nil {
			return "", fmt.Errorf("remove the old etcd member %s at %s: %w", m.Name, peerURL, err)
		}
		all = resp.Members
	}
	for id == 0 {
		resp, err := cli.MemberAddAsLearner(ctx, []string{peerURL})
		if errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrTooManyLearners) {
			// The member asked has been connected to its peers for less
			// than etcd's 5 s, or another server is still catching up.
			logger.V(2).Info("etcd cannot take a new member yet", "member", name, "err", err)
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("add etcd member %s at %s: %w", name, peerURL, err)
			case <-time.After(time.Second):
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("add etcd member %s at %s: %w", name, peerURL, err)
		}
		id, all = resp.Member.ID, resp.Members
		logger.Info("Added an etcd learner", "member", name, "peerURL", peerURL, "id", fmt.Sprintf("%x", id))
	}
	var parts []string
	for _, m := range all {
		n := m.Name
		if m.ID == id {
			n = name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	return strings.Join(parts, ","), nil
}

// joined finishes a cluster member's start: a learner is promoted once
// it has caught up, and the membership gets the member's current peer
// URL (a server whose address changed, or a lone member started with
// --cluster-init for the first time, whose peer URL was on loopback).
func (s *Server) joined(ctx context.Context, srv *etcdserver.EtcdServer, peerURL string) error {
	logger := klog.FromContext(ctx).WithName("etcd")
	id := srv.MemberID()
	const retry = 500 * time.Millisecond
	start := time.Now()
	for srv.IsLearner() {
		_, err := srv.PromoteMember(ctx, uint64(id))
		switch {
		case err == nil:
			logger.Info("Promoted this etcd member to a voting member", "id", id.String(), "after", time.Since(start).Round(time.Millisecond))
		case errors.Is(err, membership.ErrMemberNotLearner):
		case errors.Is(err, etcderrors.ErrLearnerNotReady):
			logger.V(4).Info("etcd learner not caught up yet", "id", id.String())
		default:
			logger.V(2).Info("Cannot promote this etcd learner yet", "id", id.String(), "err", err)
		}
		if err == nil || errors.Is(err, membership.ErrMemberNotLearner) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-srv.StopNotify():
			return errors.New("etcd stopped while joining its cluster")
		case <-time.After(retry):
		}
	}
	m := srv.Cluster().Member(id)
	if m == nil || slices.Equal(m.PeerURLs, []string{peerURL}) {
		return nil
	}
	logger.Info("Updating this etcd member's peer URL", "from", m.PeerURLs, "to", peerURL)
	for {
		_, err := srv.UpdateMember(ctx, membership.Member{ID: id, RaftAttributes: membership.RaftAttributes{PeerURLs: []string{peerURL}}})
		if err == nil {
			return nil
		}
		logger.V(2).Info("Cannot update this etcd member's peer URL yet", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-srv.StopNotify():
			return errors.New("etcd stopped while updating its peer URL")
		case <-time.After(retry):
		}
	}
}
