import Foundation
import ObjectGraph

/// Takes the passwords out of this process's own command line.
///
/// A `postgresql://user:PASSWORD@host/db` argument would show in `ps`, `/proc/PID/cmdline` and
/// `top` to every user of the machine for as long as the process runs, a background mount server
/// for days. The arguments are first copied (`CommandLine.arguments`, which the parser and the
/// background start read), then the original bytes of each password are overwritten with `*` in
/// place: the kernel shows the process's argv memory as it is now.
enum CommandLinePasswords {
    static func hide() {
        _ = CommandLine.arguments
        for index in 0..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            let text = String(cString: argument)
            let masked = StoreURL.redacting(text) { String(repeating: "*", count: $0.utf8.count) }
            let bytes = Array(masked.utf8)
            // Same length by construction; anything else is left alone rather than overrun.
            guard masked != text, bytes.count == strlen(argument) else { continue }
            for (offset, byte) in bytes.enumerated() { argument[offset] = CChar(bitPattern: byte) }
        }
    }
}
