package proxy

import (
	"context"
	"fmt"

	"sigs.k8s.io/knftables"
)

// Cleanup deletes k1s's proxy tables (both families) if they exist: `k1s
// killall` calls it. Without nftables there is nothing to delete.
func Cleanup(ctx context.Context, table string) error {
	if table == "" {
		table = DefaultTable
	}
	for _, family := range []knftables.Family{knftables.IPv4Family, knftables.IPv6Family} {
		nft, err := knftables.New(family, table)
		if err != nil {
			return nil // no nft: no table either
		}
		tx := nft.NewTransaction()
		tx.Add(&knftables.Table{})
		tx.Delete(&knftables.Table{})
		if err := nft.Run(ctx, tx); err != nil {
			return fmt.Errorf("delete nftables table %s %s: %w", family, table, err)
		}
	}
	return nil
}
