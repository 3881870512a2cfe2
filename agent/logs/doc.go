// Package logs owns the node agent's container log files: reading them in
// the CRI log format for /containerLogs (ReadLogs) and rotating them while
// their containers run (Manager).
//
// A CRI log file holds one record per line:
//
//	<RFC 3339 timestamp> <stdout|stderr> <P|F>[:<more tags>] <message>
//
// where P marks a partial record whose logical line continues in the next
// record of the same stream and F ends the logical line. The runtime writes
// the files; the agent only reads, renames, compresses and deletes them.
package logs
