import Foundation
import ObjectGraph

/// Core Data's external data as files a writer writes values into (``ExternalDataFolder``).
extension SQLiteStore: FileBackedValueStore {
    public func fileThreshold(for attribute: AttributeDescription) -> Int? {
        attribute.allowsExternalBinaryDataStorage && attribute.type == .binaryData ? ExternalDataFolder.threshold : nil
    }

    public func keepsValuesInFiles() { valuesInFiles.store(true, ordering: .relaxed) }

    public func newValueFile(for attribute: AttributeDescription) throws(ObjectGraphError)
        -> (writing: String, value: FileBackedValue)
    {
        guard fileThreshold(for: attribute) != nil else {
            throw ObjectGraphError(.unsupported, "\(attribute.name) keeps its values in the row")
        }
        if isReadOnly { throw ObjectGraphError(.readOnly, "\(path) is open read-only") }
        return try mechanisms.externalData.newValueFile()
    }

    public func discardValueFile(_ value: FileBackedValue) { mechanisms.externalData.discard(value) }

    public func currentFile(of value: FileBackedValue) -> String? { mechanisms.externalData.currentFile(of: value) }
}
