import ObjectGraph
import Testing

@testable import StoreFS

/// A fetched folder's result is evaluated without a lock; a change that lands meanwhile must keep
/// that result out of the cache, or the folder lists what it held before the change until the
/// next one (`diff -r` right after `cp -a` into a `list_fetched` mount saw extra names).
@Suite struct FetchedResultsTests {
    let folder = Node.fetched(ObjectID(entity: EntityID(2), key: PrimaryKey(7)), 0)
    let member = ObjectID(entity: EntityID(2), key: PrimaryKey(8))

    @Test func aResultEvaluatedBeforeAChangeIsNotKept() {
        let results = FetchedResults()
        let evaluation = results.generation
        #expect(results.dropAll().isEmpty, "a change lands while the folder is evaluated")
        #expect(!results.set([member], for: folder, evaluatedIn: evaluation))
        #expect(results.get(folder) == nil)
    }

    @Test func aResultEvaluatedAfterTheLastChangeIsKeptUntilTheNext() {
        let results = FetchedResults()
        _ = results.dropAll()
        #expect(results.set([member], for: folder, evaluatedIn: results.generation))
        #expect(results.get(folder) == [member])
        #expect(
            Array(results.dropAll().keys) == [folder], "the change names the folder, so the kernel forgets its listing")
        #expect(results.get(folder) == nil)
    }

    @Test func touchingOneFolderAlsoStopsAnEvaluationInFlight() {
        let results = FetchedResults()
        let evaluation = results.generation
        results.drop(folder)
        #expect(!results.set([member], for: folder, evaluatedIn: evaluation))
    }
}
