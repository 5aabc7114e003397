// Package dumplog is weir dump-log, like kafka-dump-log.sh (offline).
package dumplog

// weir dump-log: kafka-dump-log.sh (Kafka's DumpLogSegments). It decodes a
// partition directory's files offline, with weir's own decoders: segments
// (.log) and metadata snapshots (.checkpoint) batch by batch, offset and
// time indexes checked against their segment, transaction indexes and
// producer snapshots.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cli/tool"
	"weir/internal/log"
	"weir/internal/quorum"
	"weir/internal/record"
)

type dumpLogFlags struct {
	files                                  string
	printDataLog, deepIteration            bool
	offsetsDecoder, txnDecoder, metaDecode bool
	skipRecordMetadata, verifyIndexOnly    bool
	maxBytes                               int32
}

func NewCommand() *cobra.Command {
	var f dumpLogFlags
	cmd := &cobra.Command{
		Use:   "dump-log --files FILE[,FILE...] [options]",
		Short: "Decode log segments, indexes and snapshots offline, like kafka-dump-log.sh",
		Long: `dump-log prints the contents of the files of a partition directory, without
a running broker, in the layout of Apache Kafka's kafka-dump-log.sh
(DumpLogSegments), so that scripts reading its output keep working. Each file
is named by its suffix:

  .log          a segment: "Log starting offset: N", then one line per record
                batch (baseOffset, lastOffset, count, sequences, producer,
                leader epoch, transactional and control flags, position in the
                file, timestamp, size, codec, CRC and whether it matches)
  .checkpoint   a metadata snapshot (__cluster_metadata): as a segment, after
                "Snapshot end offset: N, epoch: E" ("KRaft bootstrap snapshot"
                for bootstrap.checkpoint)
  .index        the offset index: "offset: O position: P" per entry; an entry
                that does not point at a batch ending at O is reported on
                stderr ("Mismatches in :FILE")
  .timeindex    the time index: "timestamp: T offset: O" per entry, checked
                against the segment (mismatched, out-of-order and missing
                entries on stderr)
  .txnindex     the aborted transactions: one line per transaction
  .snapshot     a producer state snapshot: one line per producer id

Other files are ignored with a message on stderr ("Ignoring unknown file"),
and the run then exits 1 (Kafka's tool exits 0); so does one whose file is
missing or unreadable.

--deep-iteration adds one line per record under its batch, starting "| ":
offset, timestamp, key and value sizes (-1 for null), sequence and header keys,
and for control records the marker or control type. Offsets that do not
follow each other are listed on stderr at the end.

--print-data-log (implies --deep-iteration) adds each record's key and
payload, as UTF-8 text. A decoder replaces that text with the record decoded
as JSON, in the form of Kafka's generated JSON converters (and implies
--print-data-log):

  --offsets-decoder           __consumer_offsets: offset commits, classic group
                              metadata (with consumer subscriptions and
                              assignments decoded) and consumer group
                              (KIP-848) records; key {"type":..,"data":..},
                              value {"version":..,"data":..} or <DELETE>
  --transaction-log-decoder   __transaction_state: transaction metadata
  --cluster-metadata-decoder  __cluster_metadata segments and snapshots: each
                              record as {"type":"TOPIC_RECORD","version":0,
                              "data":{...}}

Kafka's --key-decoder-class and --value-decoder-class load Java
classes and are not supported; nor are --index-sanity-check,
--max-message-size and --remote-log-metadata-decoder.`,
		Example: `  # the batches of a segment
  weir dump-log --files /var/lib/weir/orders-0/00000000000000000000.log

  # every record with its key and value as text
  weir dump-log --files /var/lib/weir/orders-0/00000000000000000000.log --print-data-log

  # committed offsets and group metadata
  weir dump-log --offsets-decoder --files /var/lib/weir/__consumer_offsets-7/00000000000000000000.log

  # transactions, and the metadata log and its newest snapshot
  weir dump-log --transaction-log-decoder --files /var/lib/weir/__transaction_state-3/00000000000000000000.log
  weir dump-log --cluster-metadata-decoder --files /var/lib/weir/meta/__cluster_metadata-0/00000000000000004096-0000000002.checkpoint

  # an index and a producer snapshot; only the index's consistency
  weir dump-log --files 00000000000000000000.index,00000000000000001000.snapshot
  weir dump-log --verify-index-only --files 00000000000000000000.index`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cmd.Flags().NFlag() == 0: // Kafka's tool prints its help
				return tool.UsageError(cmd, "This tool helps to parse a log file and dump its contents to the console, useful for debugging a seemingly corrupt log segment.")
			case !cmd.Flags().Changed("files"): // on stdout, as Kafka's tool
				fmt.Fprintln(cmd.OutOrStdout(), `Missing required argument "[files]"`)
				fmt.Fprint(cmd.OutOrStdout(), cmd.UsageString())
				return tool.ExitCode(1)
			}
			return dumpLog(cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.files, "files", "", "REQUIRED: the comma separated list of data and index log files to be dumped")
	fs.BoolVar(&f.printDataLog, "print-data-log", false, "print the messages' content (set by any decoder option)")
	fs.BoolVar(&f.deepIteration, "deep-iteration", false, "print every record, not only the batches (set by --print-data-log)")
	fs.BoolVar(&f.offsetsDecoder, "offsets-decoder", false, "decode the records as __consumer_offsets records")
	fs.BoolVar(&f.txnDecoder, "transaction-log-decoder", false, "decode the records as __transaction_state records")
	fs.BoolVar(&f.metaDecode, "cluster-metadata-decoder", false, "decode the records as cluster metadata records")
	fs.BoolVar(&f.skipRecordMetadata, "skip-record-metadata", false, "leave out each record's metadata (offset, sizes, ...)")
	fs.BoolVar(&f.verifyIndexOnly, "verify-index-only", false, "check the index against the log without printing its content")
	fs.Int32Var(&f.maxBytes, "max-bytes", math.MaxInt32, "read at most this many bytes of each .log file")
	return cmd
}

// dumpErrors are the problems found, printed on stderr after all files,
// per file in the order found, as Kafka's tool does.
type dumpErrors struct {
	indexMismatches map[string][][2]int64 // index offset, log offset
	timeMismatches  map[string][][2]int64 // index timestamp, log timestamp
	timeOutOfOrder  map[string][][2]int64 // timestamp, previous timestamp
	timeNotFound    map[string][][2]int64 // indexed offset, log offset found
	nonConsecutive  map[string][][2]int64
	order           []string // files, in the order first seen
}

func (e *dumpErrors) add(m *map[string][][2]int64, file string, a, b int64) {
	if *m == nil {
		*m = map[string][][2]int64{}
	}
	if !slices.Contains(e.order, file) {
		e.order = append(e.order, file)
	}
	(*m)[file] = append((*m)[file], [2]int64{a, b})
}

func dumpLog(stdout, stderr io.Writer, f dumpLogFlags) error {
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	parser := dataParser(nil)
	printData := f.printDataLog || f.offsetsDecoder || f.txnDecoder || f.metaDecode
	switch {
	case f.offsetsDecoder:
		parser = parseOffsetsRecord
	case f.txnDecoder:
		parser = parseTxnRecord
	case f.metaDecode:
		parser = parseMetadataRecord
	default:
		parser = parseText
	}
	opts := dumpOpts{printData: printData, deep: f.deepIteration || printData, parser: parser,
		skipMeta: f.skipRecordMetadata, maxBytes: int64(f.maxBytes), verifyOnly: f.verifyIndexOnly}
	var errs dumpErrors
	ignored := false
	for _, path := range strings.Split(f.files, ",") {
		fmt.Fprintf(out, "Dumping %s\n", path)
		name := filepath.Base(path)
		fn, ok := log.ParseFilename(name)
		known := name == quorum.BootstrapFile || ok && fn.State == log.Live
		var err error
		if !known && log.HasFileExt(name) {
			// Kafka's tool reads such a file as its suffix says (and
			// fails on the name): a missing one is named missing.
			_, err = os.Stat(path)
		}
		switch {
		case err != nil:
		case !known:
			// Kafka's tool goes on (and exits 0); weir goes on and exits
			// 1, so that a misnamed file fails a script.
			out.Flush()
			fmt.Fprintf(stderr, "Ignoring unknown file %s\n", path)
			ignored = true
		case name == quorum.BootstrapFile:
			fmt.Fprintln(out, "KRaft bootstrap snapshot")
			snap := opts
			snap.snapshot = true
			err = dumpBatches(out, path, snap, &errs)
		case fn.Type == log.FileLog:
			fmt.Fprintf(out, "Log starting offset: %d\n", fn.Offset)
			err = dumpBatches(out, path, opts, &errs)
		case fn.Type == log.FileMetadataSnapshot:
			fmt.Fprintf(out, "Snapshot end offset: %d, epoch: %d\n", fn.Offset, fn.Epoch)
			snap := opts
			snap.snapshot = true
			err = dumpBatches(out, path, snap, &errs)
		case fn.Type == log.FileIndex:
			err = dumpIndex(out, path, fn.Offset, opts, &errs)
		case fn.Type == log.FileTimeIndex:
			err = dumpTimeIndex(out, path, fn.Offset, opts, &errs)
		case fn.Type == log.FileTxnIndex:
			err = dumpTxnIndex(out, path)
		case fn.Type == log.FileProducerSnapshot:
			err = dumpProducerSnapshot(out, stderr, path)
		}
		if err != nil { // Kafka's tool stops at the first file it cannot read
			out.Flush()
			var corrupt corruptRecordError
			switch {
			case errors.Is(err, fs.ErrNotExist):
				fmt.Fprintln(stderr, "java.nio.file.NoSuchFileException: "+path)
			case errors.As(err, &corrupt):
				fmt.Fprintln(stderr, "org.apache.kafka.common.errors.CorruptRecordException: "+string(corrupt))
			default:
				fmt.Fprintf(stderr, "Error dumping %s: %v\n", path, err)
			}
			return tool.ExitCode(1)
		}
	}
	out.Flush()
	errs.print(stderr)
	if ignored {
		return tool.ExitCode(1)
	}
	return nil
}

func (e *dumpErrors) print(w io.Writer) {
	for _, file := range e.order {
		if l := e.indexMismatches[file]; len(l) > 0 {
			fmt.Fprintf(w, "Mismatches in :%s\n", file)
			for _, m := range l {
				fmt.Fprintf(w, "  Index offset: %d, log offset: %d\n", m[0], m[1])
			}
		}
	}
	for _, file := range e.order {
		if l := e.timeMismatches[file]; len(l) > 0 {
			fmt.Fprintf(w, "Found timestamp mismatch in :%s\n", file)
			for _, m := range l {
				fmt.Fprintf(w, "  Index timestamp: %d, log timestamp: %d\n", m[0], m[1])
			}
		}
	}
	for _, file := range e.order {
		if l := e.timeOutOfOrder[file]; len(l) > 0 {
			fmt.Fprintf(w, "Found out of order timestamp in :%s\n", file)
			for _, m := range l {
				fmt.Fprintf(w, "  Index timestamp: %d, Previously indexed timestamp: %d\n", m[0], m[1])
			}
		}
	}
	for _, file := range e.order {
		if l := e.timeNotFound[file]; len(l) > 0 {
			fmt.Fprintln(w, "The following indexed offsets are not found in the log.")
			for _, m := range l {
				fmt.Fprintf(w, "Indexed offset: %d, found log offset: %d\n", m[0], m[1])
			}
		}
	}
	for _, file := range e.order {
		if l := e.nonConsecutive[file]; len(l) > 0 {
			fmt.Fprintf(w, "Non-consecutive offsets in %s\n", file)
			for _, m := range l {
				fmt.Fprintf(w, "  %d is followed by %d\n", m[0], m[1])
			}
		}
	}
}

// dataParser turns a record into the key and payload printed with
// --print-data-log; a nil key or payload is not printed.
type dataParser func(offset int64, r *record.Record) (key, payload *string)

type dumpOpts struct {
	printData, deep, skipMeta, verifyOnly bool
	// snapshot: a metadata snapshot, whose batches each start at offset
	// 0 in weir's layout, so offsets are not checked to follow each other.
	snapshot bool
	parser   dataParser
	maxBytes int64
}

// batchReader reads the record batches of a file one at a time.
type batchReader struct {
	f    *os.File
	size int64 // bytes that may be read
}

func openBatches(path string, limit int64) (*batchReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &batchReader{f: f, size: min(st.Size(), limit)}, nil
}

// corruptRecordError is a segment whose framing is not a batch's, where
// Kafka's tool fails with a CorruptRecordException.
type corruptRecordError string

func (e corruptRecordError) Error() string { return string(e) }

// minRecordOverhead and headerUpToMagic are Kafka's
// LegacyRecord.RECORD_OVERHEAD_V0 and HEADER_SIZE_UP_TO_MAGIC: a length
// field below the first is corruption, not a torn tail, once the second
// is in the file.
const (
	minRecordOverhead = 14
	headerUpToMagic   = 17
)

// at returns the batch at pos; ok is false when no whole batch starts
// there (the end, or a torn or invalid tail). err is a read error, or a
// length field too small to be a batch's, which Kafka's tool fails on.
func (r *batchReader) at(pos int64) (b record.Batch, ok bool, err error) {
	var head [record.LengthOverhead]byte
	if pos+headerUpToMagic >= r.size {
		return nil, false, nil
	}
	if _, err := r.f.ReadAt(head[:], pos); err != nil {
		return nil, false, err
	}
	if size := int32(binary.BigEndian.Uint32(head[record.LengthOverhead-4:])); size < minRecordOverhead {
		return nil, false, corruptRecordError(fmt.Sprintf("Found record size %d smaller than minimum record overhead (%d) in file %s.",
			size, minRecordOverhead, r.f.Name()))
	}
	n, _ := record.PeekSize(head[:])
	if n < record.HeaderSize || pos+int64(n) > r.size {
		return nil, false, nil
	}
	b = make(record.Batch, n)
	if _, err := r.f.ReadAt(b, pos); err != nil {
		return nil, false, err
	}
	return b, b.Magic() == 2, nil
}

func timestampType(b record.Batch) string {
	if b.Attributes().LogAppendTime() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

func dumpBatches(out *bufio.Writer, path string, o dumpOpts, errs *dumpErrors) error {
	r, err := openBatches(path, o.maxBytes)
	if err != nil {
		return err
	}
	defer r.f.Close()
	abs, _ := filepath.Abs(path)
	var pos int64
	lastOffset := int64(-1)
	for {
		b, ok, err := r.at(pos)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		printBatch(out, b, pos)
		if o.deep {
			if err := printRecords(out, b, o, abs, &lastOffset, errs); err != nil {
				return err
			}
		}
		pos += int64(len(b))
	}
	if trailing := r.size - pos; trailing > 0 && o.maxBytes == math.MaxInt32 {
		fmt.Fprintf(out, "Found %d invalid bytes at the end of %s\n", trailing, filepath.Base(path))
	}
	return nil
}

func printBatch(out *bufio.Writer, b record.Batch, pos int64) {
	a := b.Attributes()
	horizon := "OptionalLong.empty"
	if a.HasDeleteHorizon() {
		horizon = "OptionalLong[" + strconv.FormatInt(b.BaseTimestamp(), 10) + "]"
	}
	fmt.Fprintf(out, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s",
		b.BaseOffset(), b.LastOffset(), b.NumRecords(), b.BaseSequence(), b.LastSequence(), b.ProducerID(), b.ProducerEpoch(),
		b.LeaderEpoch(), a.Transactional(), a.Control(), horizon)
	fmt.Fprintf(out, " position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		pos, timestampType(b), b.MaxTimestamp(), len(b), b.Magic(), a.Codec(), b.CRC(), b.ValidCRC())
}

// controlTypes are Kafka's ControlRecordType names.
var controlTypes = map[int16]string{0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

func printRecords(out *bufio.Writer, b record.Batch, o dumpOpts, abs string, lastOffset *int64, errs *dumpErrors) error {
	raw, err := b.Decoded(nil, math.MaxInt32)
	if err != nil {
		return fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
	}
	it := record.NewRecords(raw, b.NumRecords())
	for r, ok := it.Next(); ok; r, ok = it.Next() {
		off := b.BaseOffset() + int64(r.OffsetDelta)
		if *lastOffset != -1 && off != *lastOffset+1 && !o.snapshot {
			errs.add(&errs.nonConsecutive, abs, *lastOffset, off)
		}
		*lastOffset = off
		prefix := "| "
		if !o.skipMeta {
			ts := b.BaseTimestamp() + r.TimestampDelta
			if b.Attributes().LogAppendTime() {
				ts = b.MaxTimestamp()
			}
			seq := int32(-1)
			if b.BaseSequence() != record.NoSequence {
				seq = int32((int64(b.BaseSequence()) + int64(r.OffsetDelta)) % (1 << 31))
			}
			keys := make([]string, len(r.Headers))
			for i, h := range r.Headers {
				keys[i] = h.Key
			}
			fmt.Fprintf(out, "%soffset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
				prefix, off, timestampType(b), ts, bytesSize(r.Key), bytesSize(r.Value), seq, strings.Join(keys, ","))
			prefix = " "
			if b.Attributes().Control() {
				printControl(out, b, r)
			}
		}
		if o.printData && !b.Attributes().Control() {
			key, payload := o.parser(off, r)
			if key != nil {
				fmt.Fprintf(out, "%skey: %s", prefix, *key)
				prefix = " "
			}
			if payload != nil {
				fmt.Fprintf(out, "%spayload: %s", prefix, *payload)
			}
		}
		out.WriteByte('\n')
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
	}
	return nil
}

func bytesSize(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// printControl prints what a control record holds.
func printControl(out *bufio.Writer, b record.Batch, r *record.Record) {
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(r.Key); err != nil {
		fmt.Fprintf(out, " controlType: UNKNOWN(%d)", -1)
		return
	}
	typ := int16(key.Type)
	switch typ {
	case 0, 1:
		if m, ok := log.ParseMarker(b); ok {
			fmt.Fprintf(out, " endTxnMarker: %s coordinatorEpoch: %d", controlTypes[typ], m.CoordinatorEpoch)
			return
		}
	case 2:
		var lc kmsg.LeaderChangeMessage
		if err := lc.ReadFrom(r.Value); err == nil {
			type voter struct {
				VoterID int32 `json:"voterId"`
			}
			voters := func(vs []kmsg.LeaderChangeMessageVoter) []voter {
				out := []voter{}
				for _, v := range vs {
					out = append(out, voter{v.VoterID})
				}
				return out
			}
			fmt.Fprintf(out, " LeaderChange: %s", jsonText(struct {
				Version        int16   `json:"version"`
				LeaderID       int32   `json:"leaderId"`
				Voters         []voter `json:"voters"`
				GrantingVoters []voter `json:"grantingVoters"`
			}{lc.Version, lc.LeaderID, voters(lc.Voters), voters(lc.GrantingVoters)}))
			return
		}
	case 3:
		if h, err := dumpSnapshotHeader(r.Value); err == nil {
			fmt.Fprintf(out, " SnapshotHeader %s", h)
			return
		}
	case 4:
		if len(r.Value) >= 2 {
			fmt.Fprintf(out, ` SnapshotFooter {"version":%d}`, int16(binary.BigEndian.Uint16(r.Value)))
			return
		}
	}
	name, ok := controlTypes[typ]
	if !ok {
		name = "UNKNOWN"
	}
	fmt.Fprintf(out, " controlType: %s(%d)", name, typ)
}

// parseText is the default decoder: key and value as UTF-8 text.
func parseText(_ int64, r *record.Record) (key, payload *string) {
	text := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := string(b)
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		return &s
	}
	return text(r.Key), text(r.Value)
}

// jsonText marshals v as Kafka's JSON converters print it: compact, with
// <, > and & left as they are.
func jsonText(v any) string {
	var b bytes.Buffer
	if err := tool.WriteJSON(&b, v); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return b.String()
}

func ptr(s string) *string { return &s }

// typed is a decoded key or value in the envelope of Kafka's decoders:
// {"type": "N", "data": {...}} for keys, {"version": "N", ...} for values.
func typedKey(t int16, data any) string {
	return jsonText(struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	}{strconv.Itoa(int(t)), data})
}

func versionedValue(v int16, data any) string {
	return jsonText(struct {
		Version string `json:"version"`
		Data    any    `json:"data"`
	}{strconv.Itoa(int(v)), data})
}

// errDecode is the line Kafka's decoders print for a record they cannot
// decode.
func errDecode(offset int64, err error) (key, payload *string) {
	return ptr(fmt.Sprintf("Error at offset %d, skipping. %v", offset, err)), nil
}
