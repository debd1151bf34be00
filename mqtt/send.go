package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// SendConfig configures Send: the broker connection (as for ClientConfig)
// and the node to ask.
type SendConfig struct {
	// Broker is the broker URL (see NormalizeBrokerURL).
	Broker string
	// Username and PasswordFile authenticate; both empty means anonymous.
	Username, PasswordFile string
	// CAFile, CertFile and KeyFile are PEM files for TLS (see ClientConfig).
	CAFile, CertFile, KeyFile string
	// Topics names the node the request goes to.
	Topics Topics
	// OnText, when set, receives the answer's text as it streams in, in
	// order: the pieces always add up to a prefix of the final text, and
	// Send passes what streaming missed (chunks are QoS 0 and may be lost)
	// once the final answer is in, so they then add up to all of it.
	OnText func(text string)
	// OnOffline, when set, is called if the node's retained availability
	// says it is offline: the request then waits in the broker until the
	// node is back (or ctx ends).
	OnOffline func()
	// Logger receives connection events; nil means slog.Default().
	Logger *slog.Logger
}

// cancelTimeout bounds the publication of a cancel when Send gives up.
const cancelTimeout = 3 * time.Second

// Send asks a node one question: it subscribes to the answer topics of a
// fresh request id, publishes req there with Stream set (QoS 1), passes the
// streamed text to OnText and returns the final answer, whatever its status.
// The connection is a clean session of its own, closed on return. When ctx
// ends first, Send publishes a cancel for the request (so the node does not
// work on for nobody) and returns ctx's error, saying whether the node was
// seen online.
func Send(ctx context.Context, cfg SendConfig, req Request) (*Final, error) {
	if req.ID == "" {
		req.ID = NewID()
	}
	if err := ValidateRequestID(req.ID); err != nil {
		return nil, fmt.Errorf("mqtt: send: request id: %w", err)
	}
	req.Stream = true
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("mqtt: send: %w", err)
	}
	done := make(chan struct{})
	defer close(done)
	c, msgs, lost, err := connectSender(ctx, cfg, done)
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(250)

	t := cfg.Topics
	filters := map[string]byte{t.ResponseFor(req.ID) + "/#": 1, t.Availability(): 1}
	if err := wait(ctx, c.SubscribeMultiple(filters, nil)); err != nil {
		return nil, fmt.Errorf("mqtt: send: subscribe: %w", err)
	}
	if err := wait(ctx, c.Publish(t.Request(), 1, false, payload)); err != nil {
		return nil, fmt.Errorf("mqtt: send: publish %s: %w", t.Request(), err)
	}

	st := sendState{cfg: cfg, id: req.ID, pending: map[int]string{}}
	for {
		select {
		case m := <-msgs:
			if f := st.handle(m); f != nil {
				return f, nil
			}
		case <-lost:
			for { // the answer may have come just before the loss
				select {
				case m := <-msgs:
					if f := st.handle(m); f != nil {
						return f, nil
					}
					continue
				default:
				}
				return nil, fmt.Errorf("mqtt: send: lost the connection to %s while waiting for the answer", cfg.Broker)
			}
		case <-ctx.Done():
			cancelRequest(c, t, req.ID)
			return nil, fmt.Errorf("mqtt: send: no answer from node %s: %w (%s)", t.Node, ctx.Err(), st.availabilityNote())
		}
	}
}

// connectSender connects a clean-session client. Its messages arrive on
// msgs and lost is closed when the connection drops; the message handler
// stops waiting for the reader once done is closed.
func connectSender(ctx context.Context, cfg SendConfig, done <-chan struct{}) (c paho.Client, msgs <-chan paho.Message, lost <-chan struct{}, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	in := make(chan paho.Message, 256)
	lostCh := make(chan struct{})
	opts := paho.NewClientOptions().AddBroker(cfg.Broker).SetClientID("edgellm-send-" + NewID()).
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(defaultConnectTimeout).SetOrderMatters(true).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			select {
			case in <- m:
			case <-done:
			}
		}).
		SetConnectionLostHandler(func(paho.Client, error) { close(lostCh) })
	if cfg.Username != "" {
		opts.SetUsername(cfg.Username)
	}
	if cfg.PasswordFile != "" {
		pw, err := readPassword(cfg.PasswordFile, log)
		if err != nil {
			return nil, nil, nil, err
		}
		opts.SetPassword(pw)
	}
	tlsCfg, err := loadTLS(ClientConfig{Broker: cfg.Broker, CAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile})
	if err != nil {
		return nil, nil, nil, err
	}
	if tlsCfg != nil {
		opts.SetTLSConfig(tlsCfg)
	}
	c = paho.NewClient(opts)
	if err := wait(ctx, c.Connect()); err != nil {
		c.Disconnect(0)
		return nil, nil, nil, fmt.Errorf("mqtt: send: connect to %s: %w", cfg.Broker, err)
	}
	return c, in, lostCh, nil
}

// cancelRequest asks the node to drop request id, without waiting long.
func cancelRequest(c paho.Client, t Topics, id string) {
	payload, _ := json.Marshal(map[string]string{"id": id})
	c.Publish(t.Cancel(), 1, false, payload).WaitTimeout(cancelTimeout)
}

// sendState follows the answer to one request.
type sendState struct {
	cfg     SendConfig
	id      string
	next    int            // the next chunk to pass on
	pending map[int]string // chunks that came before an earlier one
	printed strings.Builder
	avail   string // the node's last availability payload, "" if none seen
	warned  bool
}

// handle processes one message and returns the final answer when it is in.
func (s *sendState) handle(m paho.Message) *Final {
	t := s.cfg.Topics
	switch m.Topic() {
	case t.Availability():
		s.avail = string(m.Payload())
		if s.avail == Offline && !s.warned && s.cfg.OnOffline != nil {
			s.warned = true
			s.cfg.OnOffline()
		}
	case t.Stream(s.id):
		var ch StreamChunk
		if json.Unmarshal(m.Payload(), &ch) != nil || ch.ID != s.id || ch.Seq < s.next {
			return nil // not ours, or a duplicate
		}
		s.pending[ch.Seq] = ch.Text
		for text, ok := s.pending[s.next]; ok; text, ok = s.pending[s.next] {
			delete(s.pending, s.next)
			s.next++
			s.emit(text)
		}
	case t.ResponseFor(s.id):
		var f Final
		if json.Unmarshal(m.Payload(), &f) != nil || f.ID != s.id {
			return nil
		}
		// What streaming missed: the final text after what was printed.
		if rest, ok := strings.CutPrefix(f.Text, s.printed.String()); ok {
			s.emit(rest)
		}
		return &f
	}
	return nil
}

func (s *sendState) emit(text string) {
	if text == "" {
		return
	}
	s.printed.WriteString(text)
	if s.cfg.OnText != nil {
		s.cfg.OnText(text)
	}
}

// availabilityNote says what is known of the node's availability.
func (s *sendState) availabilityNote() string {
	switch s.avail {
	case Online:
		return "the node is online; it may be busy with a long queue"
	case Offline:
		return "the node is offline; the request waits in the broker until it is back"
	case "":
		return "the node never reported its availability: check --node and --base"
	}
	return fmt.Sprintf("the node's availability is %q", s.avail)
}
