package middleware

// placeholder until the UDP transport lands (issue 3 owns this file).

func newUDPPublisher(n *Node, c Contract, o *PublisherOptions) (pubTransport, error) {
	return nil, errNotImplemented
}

func newUDPSubscriber(n *Node, c Contract, o *SubscriberOptions) (subTransport, error) {
	return nil, errNotImplemented
}
