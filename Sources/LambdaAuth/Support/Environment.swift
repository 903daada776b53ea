#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public enum Environment {
    /// The process environment, read once where it is needed (configuration) and passed down.
    public static func current() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            // Split on the byte, not on Characters: the first Character operation of a process
            // loads Unicode tables, which this start-up step has no need of.
            if let equals = strchr(entry, 0x3D) {
                let name = UnsafeRawBufferPointer(start: entry, count: equals - entry)
                result[String(decoding: name, as: UTF8.self)] = String(cString: equals + 1)
            }
            pointer += 1
        }
        return result
    }
}
