/// How much one query may cost before it is stopped: time, rows and values visited, memory held.
///
/// A predicate is input (a query folder's name, a saved query, `export --where`, a model's
/// fetched property), and a few words of it can ask for more than the machine has: a key path
/// over chains of to-many relationships multiplies their sizes (issue 34 measured 1.7 GB and
/// growing from a 2,000-object store). Each evaluation is bounded by these limits through a
/// ``QueryBudget``; docs/SEMANTICS.md (Query limits) says what a user sees.
///
/// Each default with its reason:
/// - ``time``, 10 s: a query folder is read by `ls` and `cat`, which wait for it; every legitimate
///   query of the sample stores and the corpus answers in well under a second, and anything longer
///   belongs to `storefs export --where`, which evaluates a page at a time (each page is bounded).
/// - ``rowsVisited``, 20,000,000: rows a query reads and values it gathers (elements of to-many key
///   paths, objects evaluated in memory, matches). A full in-memory evaluation of a
///   million-object store with a few to-many steps per object stays below it; the hostile key
///   path of issue 34 passes it within seconds.
/// - ``memory``, 256 MiB: bytes of values a query holds (gathered collections, matches). A
///   million matches take 16 MB; 256 MiB leaves a small machine room for a few queries at once.
///
/// Threading: a value; share freely.
public struct QueryLimits: Sendable, Hashable {
    /// Seconds one query may run.
    public var time: Double
    /// Rows and values one query may visit.
    public var rowsVisited: Int
    /// Bytes of values one query may hold.
    public var memory: Int

    public init(time: Double = 10, rowsVisited: Int = 20_000_000, memory: Int = 256 << 20) {
        self.time = time
        self.rowsVisited = rowsVisited
        self.memory = memory
    }

    /// No limit at all: for callers that bound the work themselves (tests, migrations of a whole
    /// store, which read every row by design).
    public static let unbounded = QueryLimits(time: .infinity, rowsVisited: .max, memory: .max)
}
