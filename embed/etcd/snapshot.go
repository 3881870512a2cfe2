package etcd

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/etcdserver/cindex"
	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
)

// Restore makes this member's data directory (Config.DataDir, which must
// be missing or empty) from a snapshot file written by etcd's snapshot
// API (clientv3 Maintenance.Snapshot; `k1s etcd-snapshot save`): the
// snapshot's keys and revisions, in a new cluster of this member alone
// (Config.Name at PeerURL). It is what `etcdutl snapshot restore` does,
// written on etcd's server packages: the database copied and its sha256
// trailer checked, the old membership dropped, a WAL and a raft snapshot
// holding the new membership, and the consistent index set to the WAL's
// commit so the member applies what follows. Start the member with
// Config.ForceNewCluster afterwards, as k3s does.
func (s *Server) Restore(snapshotPath string) error {
	return restore(snapshotPath, s.cfg.DataDir, s.cfg.Name, s.PeerURL())
}

func restore(snapshotPath, dataDir, name, peerURL string) error {
	entries, err := os.ReadDir(dataDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore etcd: read %s: %w", dataDir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("restore etcd: %s is not empty: move it aside first", dataDir)
	}
	lg, err := NewLogger(zapcore.WarnLevel)
	if err != nil {
		return err
	}
	urls, err := types.NewURLsMap(name + "=" + peerURL)
	if err != nil {
		return fmt.Errorf("restore etcd: member %s at %s: %w", name, peerURL, err)
	}
	cl, err := membership.NewClusterFromURLsMap(lg, "", urls)
	if err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	member := cl.MemberByName(name)
	if member == nil {
		return fmt.Errorf("restore etcd: no member %s in the new cluster", name)
	}
	snapDir := filepath.Join(dataDir, "member", "snap")
	walDir := filepath.Join(dataDir, "member", "wal")
	dbPath := filepath.Join(snapDir, "db")
	if err := os.MkdirAll(snapDir, 0o700); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			// No half-restored member: the next try starts from nothing.
			os.RemoveAll(filepath.Join(dataDir, "member"))
		}
	}()
	if err := copyVerified(snapshotPath, dbPath); err != nil {
		return err
	}

	be := backend.NewDefaultBackend(lg, dbPath)
	mb := schema.NewMembershipBackend(lg, be)
	if err := mb.TrimMembershipFromBackend(); err != nil {
		be.Close()
		return fmt.Errorf("restore etcd: drop the snapshot's membership: %w", err)
	}
	cl.SetBackend(mb)
	for _, m := range cl.Members() {
		cl.AddMember(m, membership.ApplyBoth)
	}

	meta, err := proto.Marshal(&etcdserverpb.Metadata{NodeID: ptr(uint64(member.ID)), ClusterID: ptr(uint64(cl.ID()))})
	if err != nil {
		be.Close()
		return err
	}
	w, err := wal.Create(lg, walDir, meta)
	if err != nil {
		be.Close()
		return fmt.Errorf("restore etcd: create the WAL: %w", err)
	}
	// One entry adding each member (here, the one), committed in term 1.
	var ents []*raftpb.Entry
	var voters []uint64
	for i, id := range cl.MemberIDs() {
		ctx, err := json.Marshal(cl.Member(id))
		if err != nil {
			w.Close()
			be.Close()
			return err
		}
		data, err := proto.Marshal(&raftpb.ConfChange{Type: raftpb.ConfChangeAddNode.Enum(), NodeId: ptr(uint64(id)), Context: ctx})
		if err != nil {
			w.Close()
			be.Close()
			return err
		}
		ents = append(ents, &raftpb.Entry{Type: raftpb.EntryConfChange.Enum(), Term: ptr(uint64(1)), Index: ptr(uint64(i + 1)), Data: data})
		voters = append(voters, uint64(id))
	}
	commit, term := uint64(len(ents)), uint64(1)
	hs := &raftpb.HardState{Term: ptr(term), Vote: ptr(uint64(member.ID)), Commit: ptr(commit)}
	if err := w.Save(hs, ents); err != nil {
		w.Close()
		be.Close()
		return fmt.Errorf("restore etcd: write the WAL: %w", err)
	}
	confState := &raftpb.ConfState{Voters: voters}
	raftSnap := &raftpb.Snapshot{
		Data:     etcdserver.GetMembershipInfoInV2Format(lg, cl),
		Metadata: &raftpb.SnapshotMetadata{Index: ptr(commit), Term: ptr(term), ConfState: confState},
	}
	if err := snap.New(lg, snapDir).SaveSnap(raftSnap); err != nil {
		w.Close()
		be.Close()
		return fmt.Errorf("restore etcd: write the raft snapshot: %w", err)
	}
	if err := w.SaveSnapshot(&walpb.Snapshot{Index: ptr(commit), Term: ptr(term), ConfState: confState}); err != nil {
		w.Close()
		be.Close()
		return fmt.Errorf("restore etcd: write the WAL snapshot: %w", err)
	}
	if err := w.Close(); err != nil {
		be.Close()
		return err
	}
	cindex.UpdateConsistentIndexForce(be.BatchTx(), commit, term)
	if err := be.Close(); err != nil {
		return fmt.Errorf("restore etcd: close the database: %w", err)
	}
	lg.Info("restored etcd snapshot", zap.String("snapshot", snapshotPath), zap.String("data-dir", dataDir))
	ok = true
	return nil
}

func ptr[T any](v T) *T { return &v }

// copyVerified copies an etcd snapshot to dst, checking and removing the
// sha256 of its content that etcd's snapshot API appends.
func copyVerified(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	size := st.Size()
	// etcd's database is a whole number of 512-byte sectors; the snapshot
	// API adds the 32-byte digest.
	if size < sha256.Size || size%512 != sha256.Size {
		return fmt.Errorf("restore etcd: %s is not an etcd snapshot (no sha256 trailer; %d bytes)", src, size)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("restore etcd: %w", err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(in, size-sha256.Size)); err != nil {
		out.Close()
		return fmt.Errorf("restore etcd: copy %s: %w", src, err)
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(in, want); err != nil {
		out.Close()
		return fmt.Errorf("restore etcd: read the digest of %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("restore etcd: %s is corrupt: its sha256 does not match the one it carries", src)
	}
	return nil
}
