package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"weir/internal/sasl"
)

// SASL is the setting of the node's SASL listeners (SASL_PLAINTEXT and
// SASL_SSL).
type SASL struct {
	// Mechanisms is sasl.enabled.mechanisms.
	Mechanisms []string
	// JAAS holds each listener's listener.name.<l>.<mechanism>.sasl.jaas.config,
	// by upper-case listener name and mechanism.
	JAAS map[string]map[string]sasl.JAAS
	// FailedAuthDelay is connection.failed.authentication.delay.ms.
	FailedAuthDelay time.Duration
	// MaxReceive is sasl.server.max.receive.size.
	MaxReceive int32
	// MaxReauth is connections.max.reauth.ms (0: sessions do not expire
	// but with their credential).
	MaxReauth time.Duration
	// OAuth is the setting of the OAUTHBEARER mechanism.
	OAuth OAuth
	// InterBroker and Controller are the logins of the node's own
	// connections to the inter-broker and controller listeners, when
	// those are SASL listeners (zero Mechanism: no login).
	InterBroker, Controller Login
}

// OAuth is how OAUTHBEARER tokens are validated: on a listener whose
// listener.name.<l>.oauthbearer.sasl.server.callback.handler.class is
// Kafka's OAuthBearerValidatorCallbackHandler, as signed JWTs against the
// JWKS of the sasl.oauthbearer.* settings; on any other listener as
// unsecured JWTs, with the unsecuredValidator* options of its
// listener.name.<l>.oauthbearer.sasl.jaas.config (Kafka's default handler,
// for tests).
type OAuth struct {
	// Secured holds the upper-case names of the listeners validating
	// signed JWTs.
	Secured              map[string]bool
	JWKSURL              string
	JWKSRefresh          time.Duration
	JWKSBackoff          time.Duration
	JWKSBackoffMax       time.Duration
	Audience             []string
	Issuer               string
	SubClaim, ScopeClaim string
	ClockSkew            time.Duration
}

// Kafka's class names of the signed-JWT validator (the second is its
// name before Kafka 3.7, still accepted by Kafka).
const (
	OAuthValidatorHandler    = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	oauthValidatorHandlerOld = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
)

// UnsecuredOAuth returns the unsecured validator setting of listener.
func (s SASL) UnsecuredOAuth(listener string) (sasl.UnsecuredConfig, error) {
	return sasl.UnsecuredConfigOf(s.JAAS[listener][sasl.OAuthBearer])
}

// Login is how the node logs in to a SASL listener of another node: the
// mechanism (sasl.mechanism.inter.broker.protocol or
// sasl.mechanism.controller.protocol) and the username and password of
// that listener's listener.name.<l>.<mechanism>.sasl.jaas.config.
type Login struct {
	Mechanism, User, Password string
}

// PlainUsers returns the PLAIN users of listener (from its
// PlainLoginModule's user_<name> options).
func (s SASL) PlainUsers(listener string) map[string]string {
	return s.JAAS[listener][sasl.Plain].PlainUsers()
}

// jaasKey splits listener.name.<l>.<mechanism>.sasl.jaas.config, the one
// listener-prefixed family weir reads.
func jaasKey(name string) (listener, mechanism string, ok bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, ".sasl.jaas.config")
	if !ok {
		return "", "", false
	}
	listener, mech, ok := strings.Cut(rest, ".")
	mech = strings.ToUpper(mech)
	if !ok || listener == "" || !slices.Contains(sasl.Mechanisms, mech) {
		return "", "", false
	}
	return strings.ToUpper(listener), mech, true
}

// callbackKey recognises listener.name.<l>.oauthbearer.sasl.server.callback.handler.class,
// the one server callback handler setting weir reads.
func callbackKey(name string) (listener string, ok bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", false
	}
	listener, ok = strings.CutSuffix(rest, ".oauthbearer.sasl.server.callback.handler.class")
	if !ok || listener == "" || strings.Contains(listener, ".") {
		return "", false
	}
	return strings.ToUpper(listener), true
}

// loadCallbackHandler reads one listener's OAUTHBEARER server callback
// handler: Kafka's signed-JWT validator is the one class weir knows.
func (b *Broker) loadCallbackHandler(name, value, listener string) error {
	if v := strings.TrimSpace(value); v != OAuthValidatorHandler && v != oauthValidatorHandlerOld {
		return unsupported(name, value, "weir validates OAUTHBEARER tokens with Kafka's "+OAuthValidatorHandler+
			" (signed JWTs against sasl.oauthbearer.jwks.endpoint.url) or, when this is not set, as unsecured JWTs; it runs no other class", false)
	}
	if b.SASL.OAuth.Secured == nil {
		b.SASL.OAuth.Secured = map[string]bool{}
	}
	b.SASL.OAuth.Secured[listener] = true
	return nil
}

// loadJAAS reads one listener.name.<l>.<mechanism>.sasl.jaas.config.
func (b *Broker) loadJAAS(name, value, listener, mechanism string) error {
	j, err := sasl.ParseJAAS(value)
	if err != nil {
		return &Error{Kind: InvalidValue, Name: name, Value: value, Reason: "not a JAAS login module entry: " + err.Error(), hidden: true}
	}
	want := sasl.ScramLoginModule
	switch mechanism {
	case sasl.Plain:
		want = sasl.PlainLoginModule
	case sasl.OAuthBearer:
		want = sasl.OAuthBearerLoginModule
		if _, err := sasl.UnsecuredConfigOf(j); err != nil {
			return &Error{Kind: InvalidValue, Name: name, Value: value, Reason: err.Error(), hidden: true}
		}
	}
	if j.Module != want {
		return &Error{Kind: InvalidValue, Name: name, Value: value, Reason: fmt.Sprintf("the %s mechanism needs login module %s", mechanism, want), hidden: true}
	}
	if b.SASL.JAAS == nil {
		b.SASL.JAAS = map[string]map[string]sasl.JAAS{}
	}
	if b.SASL.JAAS[listener] == nil {
		b.SASL.JAAS[listener] = map[string]sasl.JAAS{}
	}
	b.SASL.JAAS[listener][mechanism] = j
	return nil
}

// checkSASL refuses SASL mechanisms weir does not implement and checks
// that each SASL listener can authenticate its clients.
func (b *Broker) checkSASL() []error {
	var errs []error
	g := getter(b.Values)
	b.SASL.Mechanisms = g.list("sasl.enabled.mechanisms")
	b.SASL.FailedAuthDelay = g.ms("connection.failed.authentication.delay.ms")
	b.SASL.MaxReceive = g.i32("sasl.server.max.receive.size")
	b.SASL.MaxReauth = g.ms("connections.max.reauth.ms")
	o := &b.SASL.OAuth
	o.JWKSURL = g.str("sasl.oauthbearer.jwks.endpoint.url")
	o.JWKSRefresh = g.ms("sasl.oauthbearer.jwks.endpoint.refresh.ms")
	o.JWKSBackoff = g.ms("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")
	o.JWKSBackoffMax = g.ms("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")
	o.Audience = g.list("sasl.oauthbearer.expected.audience")
	o.Issuer = g.str("sasl.oauthbearer.expected.issuer")
	o.SubClaim = g.str("sasl.oauthbearer.sub.claim.name")
	o.ScopeClaim = g.str("sasl.oauthbearer.scope.claim.name")
	o.ClockSkew = g.dur("sasl.oauthbearer.clock.skew.seconds", time.Second)
	var saslListeners []string
	for _, l := range b.Listeners {
		if strings.HasPrefix(l.SecurityProtocol, "SASL_") {
			saslListeners = append(saslListeners, l.Name)
		}
	}
	if len(saslListeners) > 0 || b.Set["sasl.enabled.mechanisms"] {
		for _, m := range b.SASL.Mechanisms {
			if !slices.Contains(sasl.Mechanisms, m) {
				errs = append(errs, unsupported("sasl.enabled.mechanisms", b.Values["sasl.enabled.mechanisms"],
					fmt.Sprintf("weir implements the SASL mechanisms %s, not %s", strings.Join(sasl.Mechanisms, ", "), m), false))
			}
		}
	}
	for _, l := range saslListeners {
		if len(b.SASL.Mechanisms) == 0 {
			errs = append(errs, combinationError("sasl.enabled.mechanisms", "SASL listener %s needs at least one mechanism", l))
		}
		if slices.Contains(b.SASL.Mechanisms, sasl.Plain) && len(b.SASL.PlainUsers(l)) == 0 {
			errs = append(errs, combinationError(jaasName(l, sasl.Plain),
				"SASL listener %s enables PLAIN, whose users must be set here: %s required user_<name>=\"<password>\";", l, sasl.PlainLoginModule))
		}
		if b.SASL.OAuth.Secured[l] && slices.Contains(b.SASL.Mechanisms, sasl.OAuthBearer) && o.JWKSURL == "" {
			errs = append(errs, combinationError("sasl.oauthbearer.jwks.endpoint.url",
				"SASL listener %s validates OAUTHBEARER tokens with %s, which needs the JWKS URL (file://, http:// or https://)", l, OAuthValidatorHandler))
		}
	}
	for l := range b.SASL.OAuth.Secured {
		if !slices.Contains(saslListeners, l) || !slices.Contains(b.SASL.Mechanisms, sasl.OAuthBearer) {
			errs = append(errs, unsupported(callbackName(l), "", fmt.Sprintf("listener %s is not a SASL listener with OAUTHBEARER enabled, so this setting would have no effect", l), false))
		}
	}
	dialled := map[string]string{} // SASL listeners the node logs in to: their mechanism
	login := func(listener, key string, into *Login) {
		if !strings.HasPrefix(b.ListenerSecurityProtocols[listener], "SASL_") {
			return
		}
		mech := g.str(key)
		if !slices.Contains(sasl.LoginMechanisms, mech) {
			errs = append(errs, unsupported(key, mech, fmt.Sprintf("listener %s, which this node connects to, uses SASL; weir logs in with %s, not %s",
				listener, strings.Join(sasl.LoginMechanisms, ", "), mech), false))
			return
		}

		if slices.Contains(saslListeners, listener) && !slices.Contains(b.SASL.Mechanisms, mech) {
			errs = append(errs, combinationError(key, "%s must be one of sasl.enabled.mechanisms (%s), since listener %s serves it",
				mech, strings.Join(b.SASL.Mechanisms, ","), listener))
		}
		j := b.SASL.JAAS[listener][mech]
		*into = Login{Mechanism: mech, User: j.Options["username"], Password: j.Options["password"]}
		if into.User == "" || into.Password == "" {
			errs = append(errs, combinationError(jaasName(listener, mech),
				"this node logs in to listener %s with %s: set username=\"...\" password=\"...\" here", listener, mech))
		}
		dialled[listener] = mech
	}
	if len(b.ControllerListenerNames) > 0 {
		login(b.ControllerListenerNames[0], "sasl.mechanism.controller.protocol", &b.SASL.Controller)
	}
	if b.HasRole("broker") {
		login(b.InterBrokerListenerName, "sasl.mechanism.inter.broker.protocol", &b.SASL.InterBroker)
	}
	for l := range dialled {
		if b.SASL.MaxReauth > 0 {
			errs = append(errs, unsupported("connections.max.reauth.ms", b.Values["connections.max.reauth.ms"],
				fmt.Sprintf("weir's own connections to other nodes do not re-authenticate, and this node logs in to SASL listener %s; "+
					"connections.max.reauth.ms needs the inter-broker and controller listeners to be PLAINTEXT or SSL", l), false))
			break
		}
	}
	for l, byMech := range b.SASL.JAAS {
		for m := range byMech {
			served := slices.Contains(saslListeners, l) && slices.Contains(b.SASL.Mechanisms, m)
			if !served && dialled[l] != m {
				errs = append(errs, unsupported(jaasName(l, m), "", fmt.Sprintf("listener %s is not a SASL listener with mechanism %s enabled or logged in to, so this setting would have no effect", l, m), true))
			}
		}
	}
	return errs
}

func callbackName(listener string) string {
	return "listener.name." + strings.ToLower(listener) + ".oauthbearer.sasl.server.callback.handler.class"
}

func jaasName(listener, mechanism string) string {
	return "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
}
