import Foundation
import ObjectGraph

extension BinaryStoreFormat {
    /// How the objects of a block are decoded: in chunks of `chunkObjects` objects, by the
    /// reading thread and `helpers` more threads, while the reading thread puts the decoded
    /// objects into the graph in the file's order (docs/BINARY_FORMAT.md, "Reading rules").
    struct Parallelism: Sendable {
        var chunkObjects: Int
        var helpers: Int

        /// A chunk of 8,192 objects is a few hundred KB decoded; one helper per further core, at
        /// most 3 (the graph's inserts, on the reading thread, keep up with about that many).
        static var automatic: Parallelism {
            Parallelism(chunkObjects: 8192, helpers: min(max(ProcessInfo.processInfo.activeProcessorCount - 1, 0), 3))
        }

        /// Everything on the reading thread, in one piece per block (tests compare against it).
        static let sequential = Parallelism(chunkObjects: Int.max, helpers: 0)
    }

    /// What every object of one block shares: its entity, its fields in the file's order, and
    /// where each goes in a snapshot.
    struct BlockLayout: @unchecked Sendable {
        let entityID: EntityID
        let entityName: String
        let attributes: [String]
        let types: [AttributeType]
        let attributeNames: PropertyNames
        let attributeSlots: [Int]
        let toOneNames: PropertyNames
        let toOneSlots: [Int]
        let toOneNumbers: [UInt32]
        let toManys: [String]
        let toManyNumbers: [UInt32]
        /// The model's entity for each entry of the file's name table (nil: not an entity).
        let entityForName: [EntityID?]
        let names: [String]

        /// The fewest bytes an object of the block takes: its key, its version, a byte per field.
        var minimumObjectBytes: Int { 2 + types.count + toOneSlots.count + toManys.count }
    }

    /// The objects of one chunk, decoded but not yet in the graph.
    struct DecodedChunk: @unchecked Sendable {
        var snapshots: [Snapshot] = []
        /// Where each object ends, for the error that names a key given twice.
        var ends: [Int] = []
        /// The block's to-many lists of each object, one after the other.
        var toMany: [[ObjectID]] = []
        var refs: [Reference] = []
        /// What stopped the chunk after `snapshots` (everything before it was decoded).
        var error: ObjectGraphError?
        var end = 0
    }

    /// Decodes chunks of one block; safe from several threads (it only reads).
    struct ChunkDecoder: @unchecked Sendable {
        let bytes: UnsafeRawBufferPointer
        let path: String
        let layout: BlockLayout
        /// Where each chunk starts, and how many objects it holds.
        let starts: [Int]
        let counts: [Int]

        func decode(_ chunk: Int) -> DecodedChunk {
            var r = Reader(bytes: bytes, path: path)
            r.position = starts[chunk]
            var out = DecodedChunk()
            let count = counts[chunk]
            // As many as the bytes left could hold at most: a count the file overstates is found
            // below as a corrupt file, and costs no allocation first.
            let possible = min(count, (bytes.count - r.position) / layout.minimumObjectBytes)
            out.snapshots.reserveCapacity(possible)
            out.ends.reserveCapacity(possible)
            do throws(ObjectGraphError) {
                for _ in 0..<count { try decodeObject(&r, into: &out) }
                if chunk + 1 < starts.count, r.position != starts[chunk + 1] {
                    throw r.corrupt("the chunk of \(count) objects does not end where the next begins")
                }
            } catch {
                out.error = error
            }
            out.end = r.position
            return out
        }

        private func decodeObject(_ r: inout Reader, into out: inout DecodedChunk) throws(ObjectGraphError) {
            let l = layout
            func entity(_ i: Int) throws(ObjectGraphError) -> EntityID {
                guard i < l.entityForName.count, let e = l.entityForName[i] else {
                    throw r.corrupt("entity \(i < l.names.count ? l.names[i] : "#\(i)") is not in the model")
                }
                return e
            }
            let rawKey = try r.varint()
            guard rawKey > 0, rawKey <= UInt64(Int64.max) else {
                throw r.corrupt("object key \(rawKey) is invalid")
            }
            let id = ObjectID(entity: l.entityID, key: PrimaryKey(Int64(rawKey)))
            var snapshot = Snapshot(
                objectID: id, version: try r.signed(), attributes: PropertyValues(layout: l.attributeNames),
                toOne: PropertyValues(layout: l.toOneNames))
            // By index: iterating the descriptions would copy each (a retain and release per field).
            for i in l.types.indices {
                if let value = try r.value(as: l.types[i], named: { "\(l.entityName).\(l.attributes[i])" }) {
                    snapshot.attributes.setValue(value, slot: l.attributeSlots[i])
                }
            }
            for i in l.toOneSlots.indices {
                let present = try r.byte()
                guard present <= 1 else { throw r.corrupt("to-one marker \(present) is invalid") }
                if present == 1 {
                    let target = ObjectID(entity: try entity(try r.count()), key: try r.key())
                    snapshot.toOne.setValue(target, slot: l.toOneSlots[i])
                    out.refs.append(Reference(source: id, relationship: l.toOneNumbers[i], target: target))
                }
            }
            for i in l.toManys.indices {
                let n = try r.count()
                var list: [ObjectID] = []
                list.reserveCapacity(n)
                for _ in 0..<n {
                    let target = ObjectID(entity: try entity(try r.count()), key: try r.key())
                    list.append(target)
                    out.refs.append(Reference(source: id, relationship: l.toManyNumbers[i], target: target))
                }
                out.toMany.append(list)
            }
            out.snapshots.append(snapshot)
            out.ends.append(r.position)
        }
    }

    /// Where the chunks of a block of `count` objects starting at `r.position` begin: every
    /// `per`-th object, found by stepping over the objects without decoding them. What cannot be
    /// stepped over (a damaged file) ends the search: the last chunk then holds every object
    /// from there on, and decoding it reports the damage exactly as reading in one piece does.
    static func chunkStarts(_ reader: Reader, count: Int, per: Int, layout: BlockLayout)
        -> (starts: [Int], counts: [Int])
    {
        guard per > 0, count > per else { return ([reader.position], [count]) }
        var r = reader
        var starts = [r.position]
        do throws(ObjectGraphError) {
            for done in 0..<count {
                if done > 0, done % per == 0 { starts.append(r.position) }
                try skipObject(&r, layout: layout)
            }
        } catch {
            // Not reported here: the chunk that holds it reports it with its decoded neighbours.
        }
        var counts = Array(repeating: per, count: starts.count)
        counts[counts.count - 1] = count - per * (starts.count - 1)
        return (starts, counts)
    }

    private static func skipObject(_ r: inout Reader, layout: BlockLayout) throws(ObjectGraphError) {
        _ = try r.varint()
        _ = try r.varint()
        for _ in layout.types.indices {
            guard let tag = Tag(rawValue: try r.byte()) else { throw r.corrupt("unknown value tag") }
            switch tag {
            case .null, .falseValue, .trueValue: break
            case .integer: _ = try r.varint()
            case .decimal, .string, .data: _ = try r.raw(try r.count())
            case .double, .date: _ = try r.raw(8)
            case .float: _ = try r.raw(4)
            case .uuid: _ = try r.raw(16)
            }
        }
        for _ in layout.toOneSlots.indices {
            switch try r.byte() {
            case 0: break
            case 1:
                _ = try r.varint()
                _ = try r.varint()
            default: throw r.corrupt("to-one marker is invalid")
            }
        }
        for _ in layout.toManys.indices {
            for _ in 0..<(try r.count()) {
                _ = try r.varint()
                _ = try r.varint()
            }
        }
    }

    /// Hands out a block's chunks to the reading thread and its helpers, and gives the reading
    /// thread the decoded chunks in order. Helpers run at most `window` chunks ahead of what the
    /// reading thread has taken, so decoded objects waiting for the graph stay bounded.
    final class ChunkSchedule: @unchecked Sendable {
        private let condition = NSCondition()
        private let decoder: ChunkDecoder
        private let window: Int
        // Guarded by `condition`.
        private var results: [DecodedChunk?]
        private var nextClaim = 0
        private var taken = 0
        private var stopped = false
        private var helpersRunning = 0

        init(decoder: ChunkDecoder, window: Int) {
            self.decoder = decoder
            self.window = max(window, 1)
            results = Array(repeating: nil, count: decoder.starts.count)
        }

        func startHelpers(_ count: Int) {
            guard count > 0, results.count > 1 else { return }
            condition.lock()
            helpersRunning = count
            condition.unlock()
            for _ in 0..<count { Thread.detachNewThread { [self] in help() } }
        }

        private func help() {
            condition.lock()
            while true {
                while !stopped, nextClaim < results.count, nextClaim >= taken + window { condition.wait() }
                guard !stopped, nextClaim < results.count else { break }
                decodeNextChunk()
            }
            helpersRunning -= 1
            condition.broadcast()
            condition.unlock()
        }

        /// Chunk `index` (taken in order from 0), decoded by whichever thread got to it; the
        /// reading thread decodes chunks itself rather than wait.
        func take(_ index: Int) -> DecodedChunk {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let done = results[index] {
                    results[index] = nil
                    taken = index + 1
                    condition.broadcast()
                    return done
                }
                if nextClaim < results.count, nextClaim < index + window {
                    decodeNextChunk()
                } else {
                    condition.wait()
                }
            }
        }

        /// Claims the next chunk and decodes it without holding the lock (held on entry and exit).
        private func decodeNextChunk() {
            let chunk = nextClaim
            nextClaim += 1
            condition.unlock()
            let decoded = decoder.decode(chunk)
            condition.lock()
            results[chunk] = decoded
            condition.broadcast()
        }

        /// Stops the helpers and waits until none is running: the bytes they read are the
        /// caller's only until it returns.
        func finish() {
            condition.lock()
            stopped = true
            condition.broadcast()
            while helpersRunning > 0 { condition.wait() }
            condition.unlock()
        }
    }
}
