import NameMatching

/// Orders names as people read them: case-insensitively, and runs of digits by their value
/// (`3G` before `100% Loss`, `WiFi` before `WiFi 802.11ac`).
func namesInReadingOrder(_ lhs: String, _ rhs: String) -> Bool {
    var left = lhs.lowercased()[...]
    var right = rhs.lowercased()[...]
    while let l = left.first, let r = right.first {
        if l.isASCII, l.isNumber, r.isASCII, r.isNumber {
            let leftDigits = left.prefix { $0.isASCII && $0.isNumber }
            let rightDigits = right.prefix { $0.isASCII && $0.isNumber }
            let leftValue = leftDigits.drop { $0 == "0" }
            let rightValue = rightDigits.drop { $0 == "0" }
            if leftValue.count != rightValue.count { return leftValue.count < rightValue.count }
            if leftValue != rightValue { return leftValue < rightValue }
            left = left.dropFirst(leftDigits.count)
            right = right.dropFirst(rightDigits.count)
        } else {
            if l != r { return l < r }
            left = left.dropFirst()
            right = right.dropFirst()
        }
    }
    return left.isEmpty && !right.isEmpty
}
