package volume

import (
	"os"
	"syscall"
)

func statGID(info os.FileInfo) int {
	return int(info.Sys().(*syscall.Stat_t).Gid)
}
