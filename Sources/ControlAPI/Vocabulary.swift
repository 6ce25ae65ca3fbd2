// The words the API's documents are made of (condition ids, peers, namespaces, durations,
// holders, error codes) are the domain's too; every user of the API has them with it.
@_exported import LinkCondVocabulary
