import FUSEBridge
import RangeCache

// The driver's side of the requests the read rules carry as tokens
// (`Episode.Token`): made from the FUSE replies, resolved to answer them.

extension Episode.Token where Kind == Episode.ReadRequest {
    init(_ reply: any DataReplying) {
        self.init(wrapping: reply)
    }

    /// The read's reply.
    var reply: any DataReplying {
        guard let reply = request as? any DataReplying else {
            preconditionFailure("a read's token holds \(type(of: request)), not a read's reply")
        }
        return reply
    }
}

extension Episode.Token where Kind == Episode.OpenRequest {
    init(_ reply: any OpenReplying) {
        self.init(wrapping: reply)
    }

    /// The open's reply.
    var reply: any OpenReplying {
        guard let reply = request as? any OpenReplying else {
            preconditionFailure("an open's token holds \(type(of: request)), not an open's reply")
        }
        return reply
    }
}

extension Episode.Token where Kind == Episode.SizeRequest {
    /// A box for the answer of an attribute request, so a token can hold it.
    private final class Answer: Sendable {
        let answer: @Sendable () -> Void

        init(_ answer: @escaping @Sendable () -> Void) {
            self.answer = answer
        }
    }

    init(_ answer: @escaping @Sendable () -> Void) {
        self.init(wrapping: Answer(answer))
    }

    /// Answers the attribute request, now that the size is known.
    func answer() {
        guard let box = request as? Answer else {
            preconditionFailure("a stat's token holds \(type(of: request)), not its answer")
        }
        box.answer()
    }
}

extension Episode.Token where Kind == Episode.ScratchRequest {
    init(_ file: ScratchFile) {
        self.init(wrapping: file)
    }

    /// The scratch file.
    var file: ScratchFile {
        guard let file = request as? ScratchFile else {
            preconditionFailure("a scratch file's token holds \(type(of: request))")
        }
        return file
    }
}

extension Episode.OpenAnswer {
    /// The options the FUSE open is answered with.
    var options: OpenOptions {
        OpenOptions(handle: handle, keepCache: keepCache, dropAttributes: dropAttributes)
    }
}
