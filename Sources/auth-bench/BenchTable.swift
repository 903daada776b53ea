import LambdaAuth
import LambdaAuthTooling

struct BenchSection {
    let name: String
    let run: (inout BenchTable) -> Void
}

enum BenchSections {
    /// Each concern adds its section here.
    static var all: [BenchSection] { [VerificationBench.section, StoreBench.section, ImportBench.section, RuntimeBench.section, FloorBench.section, StartupBench.section, FlowBench.section, SigningBench.section, OIDCBench.section, PasskeyBench.section, MFABench.section, AWSBench.section, ServeBench.section, GoPeerBench.section, RevocationBench.section, EventsBench.section, HookBench.section] }
}

/// Rows of `measurement | value | unit | target`, printed as one aligned table.
struct BenchTable {
    typealias Row = BenchReport.Row
    private(set) var rows: [Row] = []

    mutating func add(_ section: String, _ measurement: String, _ value: String, target: String = "") {
        rows.append(Row(section: section, measurement: measurement, value: value, target: target))
    }

    func print() {
        let header = Row(section: "section", measurement: "measurement", value: "value", target: "target")
        let all = [header] + rows
        let widths = [all.map(\.section.count).max() ?? 0, all.map(\.measurement.count).max() ?? 0,
                      all.map(\.value.count).max() ?? 0]
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        for (index, row) in all.enumerated() {
            Swift.print("| \(pad(row.section, widths[0])) | \(pad(row.measurement, widths[1])) | \(pad(row.value, widths[2])) | \(row.target)")
            if index == 0 {
                Swift.print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|---")
            }
        }
    }
}

/// Median and percentiles of a sample, in the sample's unit.
func percentile(_ samples: [Double], _ fraction: Double) -> Double {
    guard !samples.isEmpty else { return .nan }
    let sorted = samples.sorted()
    let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
    return sorted[index]
}

func format(_ value: Double, decimals: Int = 2) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var text = String(rounded)
    if let dot = text.firstIndex(of: ".") {
        let fraction = text[text.index(after: dot)...]
        if fraction.count < decimals { text += String(repeating: "0", count: decimals - fraction.count) }
    } else if decimals > 0 {
        text += "." + String(repeating: "0", count: decimals)
    }
    return text
}
