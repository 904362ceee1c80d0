// fuzz-modules: ObjectGraph Digest Logging
// fuzz-max-len: 65536
//
// The mapping-model readers: the input is read both as a compiled mapping model (a `.cdm`, a
// keyed archive of NSMappingModel) and as the text of a value expression. A mapping model that
// decodes has its expressions printed and parsed again; an expression that parses is printed and
// parsed again, and must give the same expression (a difference is reported as a crash).
import Foundation
import ObjectGraph

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMappingModel(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    if let mapping = try? CompiledMappingModelDecoder.decode(bytes, source: "fuzz input") {
        for entity in mapping.entityMappings {
            for property in entity.attributeMappings + entity.relationshipMappings {
                if let expression = property.valueExpression { _ = try? MappingExpression.parse(expression.description) }
            }
        }
    }
    let text = String(decoding: bytes, as: UTF8.self)
    if let expression = try? MappingExpression.parse(text) {
        guard let again = try? MappingExpression.parse(expression.description), again == expression else {
            fatalError("\(text) parsed as \(expression), which prints as \(expression.description) and does not parse back to it")
        }
    }
    return 0
}
