package mqtt

import (
	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// copyingStore is Paho's in-memory store, except that Put keeps a copy of a
// PUBLISH rather than the packet itself. Paho persists an outgoing PUBLISH
// and then writes it to the connection; when a (re)connection's resume()
// runs at the same moment (it does right after connecting, when we publish
// "online"), it takes the stored packet, sets its Dup flag and writes it
// too, racing with the first write on the same packet
// (eclipse-paho/paho.mqtt.golang#703). With a copy in the store, the packet
// being sent and the packet resume() re-sends are different objects.
type copyingStore struct {
	paho.Store
}

// Put stores message, copied when it is a PUBLISH.
func (s copyingStore) Put(key string, message packets.ControlPacket) {
	if p, ok := message.(*packets.PublishPacket); ok {
		dup := *p
		message = &dup
	}
	s.Store.Put(key, message)
}
