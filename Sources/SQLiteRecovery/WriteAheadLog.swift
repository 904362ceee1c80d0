/// An SQLite `-wal` file read as SQLite reads it, and what SQLite would ignore kept apart: a
/// 32-byte header (magic, page size, salts, checksum), then frames of a 24-byte header and one
/// page each. A frame belongs to the log when its salts are the header's and its checksum, which
/// runs on from the previous frame's, matches; a frame with a database size is a commit.
///
/// Frames are sorted into those of commits (``Frame/State/committed(_:)``), those after the last
/// commit (a transaction that never committed: ``Frame/State/uncommitted``), and those SQLite
/// would not read (``Frame/State/unverified``): after the first frame that fails, among them the
/// frames of earlier generations of the log, left behind when a checkpoint restarted it. A
/// truncated last frame is left out.
public struct WriteAheadLog: Sendable {
    public struct Frame: Sendable, Hashable {
        public enum State: Sendable, Hashable {
            /// Part of commit N (1 for the log's first commit).
            case committed(Int)
            /// Verified, but no commit follows it.
            case uncommitted
            /// Not part of the log SQLite reads: a broken checksum, other salts (an earlier
            /// generation of the log), or after such a frame.
            case unverified
        }

        /// The frame's number, from 1.
        public var number: Int
        public var page: UInt32
        /// For a commit frame, the database's size in pages after the commit; else 0.
        public var databaseSize: UInt32
        public var state: State
        /// Where the frame's page starts in the file.
        public var offset: Int64
    }

    public struct Commit: Sendable, Hashable {
        /// From 1.
        public var number: Int
        /// The commit's frames are those numbered `firstFrame...lastFrame`.
        public var firstFrame: Int
        public var lastFrame: Int
        /// The database's size in pages after the commit.
        public var pageCount: UInt32
    }

    public static let headerSize = 32
    public static let frameHeaderSize = 24
    /// At most this many frames are read (a 1 GB log of 4 KiB pages has 250,000).
    public static let maximumFrames = 4_000_000

    public let pageSize: Int
    /// Whether the header is one SQLite would read (magic, version, page size, checksum).
    public let headerIsValid: Bool
    public let salts: (UInt32, UInt32)
    public let checkpointSequence: UInt32
    public let frames: [Frame]
    public let commits: [Commit]

    /// Reads the log in `source`. `databasePageSize` is used when the header is unreadable (its
    /// frames are then all unverified, and read with the database's page size); nil when neither
    /// gives a page size.
    public init?(_ source: any ByteSource, databasePageSize: Int?) {
        guard let header = source.bytes(at: 0, count: Self.headerSize) else { return nil }
        let magic = header.bigEndian(at: 0, count: 4) ?? 0
        let bigEndianChecksums = magic == 0x377f_0683
        let version = header.bigEndian(at: 4, count: 4) ?? 0
        let declared = Int(header.bigEndian(at: 8, count: 4) ?? 0)
        let declaredValid = declared >= 512 && declared <= 65536 && declared & (declared - 1) == 0
        var valid = (magic == 0x377f_0682 || magic == 0x377f_0683) && version == 3_007_000 && declaredValid
        if valid {
            let computed = Self.checksum(header[0..<24], bigEndian: bigEndianChecksums, seed: (0, 0))
            valid = computed.0 == header.bigEndian(at: 24, count: 4) && computed.1 == header.bigEndian(at: 28, count: 4)
        }
        guard let pageSize = declaredValid ? declared : databasePageSize, pageSize >= 512, pageSize <= 65536 else {
            return nil
        }
        self.pageSize = pageSize
        headerIsValid = valid
        checkpointSequence = header.bigEndian(at: 12, count: 4) ?? 0
        salts = (header.bigEndian(at: 16, count: 4) ?? 0, header.bigEndian(at: 20, count: 4) ?? 0)
        var checksum = (header.bigEndian(at: 24, count: 4) ?? 0, header.bigEndian(at: 28, count: 4) ?? 0)

        let frameSize = Int64(Self.frameHeaderSize + pageSize)
        let count = Int(min((source.size - Int64(Self.headerSize)) / frameSize, Int64(Self.maximumFrames)))
        var frames: [Frame] = []
        frames.reserveCapacity(max(count, 0))
        var chainIntact = valid
        var lastCommitFrame = 0
        for index in 0..<max(count, 0) {
            let offset = Int64(Self.headerSize) + Int64(index) * frameSize
            guard let frameHeader = source.bytes(at: offset, count: Self.frameHeaderSize) else { break }
            let page = frameHeader.bigEndian(at: 0, count: 4) ?? 0
            let size = frameHeader.bigEndian(at: 4, count: 4) ?? 0
            if chainIntact {
                let frameSalts = (
                    frameHeader.bigEndian(at: 8, count: 4) ?? 0, frameHeader.bigEndian(at: 12, count: 4) ?? 0
                )
                if frameSalts != salts || page == 0 {
                    chainIntact = false
                } else if let data = source.bytes(at: offset + Int64(Self.frameHeaderSize), count: pageSize) {
                    var sum = Self.checksum(frameHeader[0..<8], bigEndian: bigEndianChecksums, seed: checksum)
                    sum = Self.checksum(data[...], bigEndian: bigEndianChecksums, seed: sum)
                    if sum.0 == frameHeader.bigEndian(at: 16, count: 4)
                        && sum.1 == frameHeader.bigEndian(at: 20, count: 4)
                    {
                        checksum = sum
                    } else {
                        chainIntact = false
                    }
                } else {
                    chainIntact = false
                }
            }
            frames.append(
                Frame(
                    number: index + 1, page: page, databaseSize: size, state: chainIntact ? .uncommitted : .unverified,
                    offset: offset + Int64(Self.frameHeaderSize)))
            if chainIntact && size != 0 { lastCommitFrame = index + 1 }
        }
        var commits: [Commit] = []
        var first = 1
        for index in 0..<lastCommitFrame where frames[index].databaseSize != 0 {
            let commit = Commit(
                number: commits.count + 1, firstFrame: first, lastFrame: index + 1,
                pageCount: frames[index].databaseSize)
            for k in (first - 1)..<(index + 1) { frames[k].state = .committed(commit.number) }
            commits.append(commit)
            first = index + 2
        }
        self.frames = frames
        self.commits = commits
    }

    /// SQLite's WAL checksum: over 8-byte chunks as two 32-bit words in the byte order the magic
    /// says, each pair folded into the running sums.
    static func checksum(_ bytes: ArraySlice<UInt8>, bigEndian: Bool, seed: (UInt32, UInt32)) -> (UInt32, UInt32) {
        var (s0, s1) = seed
        var i = bytes.startIndex
        let end = bytes.startIndex + (bytes.count / 8) * 8
        while i < end {
            let x0: UInt32
            let x1: UInt32
            if bigEndian {
                x0 =
                    UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8
                    | UInt32(bytes[i + 3])
                x1 =
                    UInt32(bytes[i + 4]) << 24 | UInt32(bytes[i + 5]) << 16 | UInt32(bytes[i + 6]) << 8
                    | UInt32(bytes[i + 7])
            } else {
                x0 =
                    UInt32(bytes[i + 3]) << 24 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 1]) << 8
                    | UInt32(bytes[i])
                x1 =
                    UInt32(bytes[i + 7]) << 24 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 5]) << 8
                    | UInt32(bytes[i + 4])
            }
            s0 = s0 &+ x0 &+ s1
            s1 = s1 &+ x1 &+ s0
            i += 8
        }
        return (s0, s1)
    }
}
