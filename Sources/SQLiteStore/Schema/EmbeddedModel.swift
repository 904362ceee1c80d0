import Foundation
import Logging
import ObjectGraph

/// Loads the model storefs embeds in the metadata of the stores it writes (`StoreFSModel`).
enum EmbeddedModel {
    /// The embedded model, or nil (logged) when it does not load: the caller then infers one.
    static func load(_ contents: String, source: String, logger: Logger) -> ManagedObjectModel? {
        do {
            return try XcodeModelLoader.load(
                contents: Data(contents.utf8), source: "\(source) metadata \(StoreMetadata.modelKey)")
        } catch {
            logger.warning(
                "\(source): the model in its metadata does not load (\(error)); inferring one from the schema")
            return nil
        }
    }
}
